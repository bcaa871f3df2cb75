package bytesize_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/internal/bytesize"
)

func ExampleFormat() {
	for _, n := range []int64{0, 512, 1536, 12 << 20, 3 << 30} {
		fmt.Println(bytesize.Format(n))
	}
	// Output:
	// 0 B
	// 512 B
	// 1.5 KiB
	// 12.0 MiB
	// 3.0 GiB
}
