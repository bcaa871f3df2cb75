// Command apisurface counts a package's exported surface the way the project's issues measure
// it: exported top-level names (functions, types, variables, constants) plus the exported
// methods declared on exported types, in non-test files (an interface's methods are part of
// its type, not counted apart). It prints one line per package directory and a total.
//
//	go run ./hack/apisurface controller informer manager client predicate
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"

	"sort"
	"strings"
)

func main() {
	list := flag.Bool("names", false, "print each exported name, not only the counts")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: apisurface [-names] DIR...  (each a package directory)")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	total := 0
	for _, dir := range flag.Args() {
		names, err := surface(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apisurface: %s: %v\n", dir, err)
			os.Exit(1)
		}
		if *list {
			for _, n := range names {
				fmt.Printf("%s.%s\n", dir, n)
			}
		}
		fmt.Printf("%-40s %5d\n", dir, len(names))
		total += len(names)
	}
	fmt.Printf("%-40s %5d\n", "total", total)
}

// surface returns the exported names of the package in dir, sorted.
func surface(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	exportedTypes := map[string]bool{}
	var files []*ast.File
	keys := make([]string, 0, len(pkgs))
	for k := range pkgs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasSuffix(k, "_test") || k == "main" {
			continue
		}
		for _, f := range pkgs[k].Files {
			files = append(files, f)
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names[s.Name.Name] = true
							exportedTypes[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					if d.Name.IsExported() {
						names[d.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			if recv := receiverType(fd.Recv.List[0].Type); exportedTypes[recv] {
				names[recv+"."+fd.Name.Name] = true
			}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// receiverType is the name of a method's receiver type: T for T, *T, T[K] and *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
