package certwatcher

import (
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// notifier delivers the file-system events of the directories holding the pair. Its zero value
// (no notifications: the watcher could not be made, or the file system has none) delivers
// nothing, and Start then relies on its ticker alone.
type notifier struct {
	fs    *fsnotify.Watcher
	evC   chan fsnotify.Event // fs.Events until it closes, then nil
	errC  chan error          // fs.Errors until it closes, then nil
	dirs  map[string]bool
	names map[string]bool // the base names of the pair's files
}

// notify watches the directories of w's files rather than the files: a Secret volume update
// replaces the ..data symlink the files resolve through, and a file replaced by rename is a
// new inode a watch on the old one never hears about.
func (w *CertWatcher) notify(logger klog.Logger) *notifier {
	n := &notifier{dirs: map[string]bool{}, names: map[string]bool{}}
	for _, f := range []string{w.certFile, w.keyFile} {
		n.dirs[filepath.Clean(filepath.Dir(f))] = true
		n.names[filepath.Base(f)] = true
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		logger.Info("File-system notifications unavailable; polling only", "interval", w.interval, "err", err)
		return n
	}
	watched := 0
	for dir := range n.dirs {
		if err := fw.Add(dir); err != nil {
			logger.Info("Directory not watched; polling it", "dir", dir, "interval", w.interval, "err", err)
			continue
		}
		watched++
	}
	if watched == 0 {
		_ = fw.Close()
		return n
	}
	n.fs, n.evC, n.errC = fw, fw.Events, fw.Errors
	return n
}

func (n *notifier) events() <-chan fsnotify.Event { return n.evC }

func (n *notifier) errors() <-chan error { return n.errC }

// closed forgets the channel that was found closed, so that Start stops selecting it.
func (n *notifier) closed(events bool) {
	if events {
		n.evC = nil
	} else {
		n.errC = nil
	}
}

// concerns reports whether ev may have changed the pair: an event on one of its files, on a
// kubelet atomic-writer entry (..data and the timestamped directories it points to), or on a
// watched directory itself (removed or renamed: the files are gone with it). A change of
// permissions alone does not change the content.
func (n *notifier) concerns(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	name := filepath.Clean(ev.Name)
	if n.dirs[name] {
		return true
	}
	base := filepath.Base(name)
	return n.dirs[filepath.Dir(name)] && (n.names[base] || strings.HasPrefix(base, ".."))
}

// close stops the watcher and waits for its goroutine.
func (n *notifier) close(logger klog.Logger) {
	if n.fs == nil {
		return
	}
	if err := n.fs.Close(); err != nil {
		logger.V(1).Info("Closing the file-system watcher failed", "err", err)
	}
}
