package data

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// handOver is the set NaturalClients loaded to count its clients, kept
// for the Load of the same dataset that follows it (a run counts the
// clients while resolving its settings, then loads the data), so that a
// large file is read once. It is taken by that one Load (the caller then
// owns it) and only if the options are the same and the files unchanged
// (same size and modification time).
var handOver struct {
	sync.Mutex
	key   string
	split *Split
}

// loadKey identifies a load of a user's dataset: the name, the options and
// the size and modification time of every file read. ok is false when a
// file cannot be examined (the load then reports it).
func loadKey(name string, o Options) (key string, ok bool) {
	deref := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	u := o.UserData
	key = fmt.Sprintf("%s|%q|%d|%q|%q|%v|%q|%q|%s|%s|%d", name, o.DataDir, o.Seed, u.DataFile, u.TestFile, u.TestFraction,
		u.LabelColumn, u.ClientColumn, deref(u.FedproxAlpha), deref(u.FedproxBeta), u.FedproxDevices)
	files := []string{u.DataFile, u.TestFile}
	if name == "leaf" {
		for _, sub := range []string{"train", "test"} {
			m, _ := filepath.Glob(filepath.Join(o.DataDir, sub, "*.json"))
			files = append(files, m...)
		}
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			return "", false
		}
		key += fmt.Sprintf("|%q:%d:%s", f, st.Size(), st.ModTime().Format(time.RFC3339Nano))
	}
	return key, true
}

// keep hands s over to the next Load of name with o.
func keep(name string, o Options, s Split) {
	key, ok := loadKey(name, o)
	handOver.Lock()
	defer handOver.Unlock()
	handOver.key, handOver.split = key, nil
	if ok {
		handOver.split = &s
	}
}

// take returns the set kept for a Load of name with o, if there is one,
// and forgets it.
func take(name string, o Options) (Split, bool) {
	handOver.Lock()
	defer handOver.Unlock()
	if handOver.split == nil {
		return Split{}, false
	}
	key, ok := loadKey(name, o)
	if !ok || key != handOver.key {
		return Split{}, false
	}
	s := *handOver.split
	handOver.key, handOver.split = "", nil
	return s, true
}
