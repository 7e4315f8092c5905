package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropExecutablePages advises the kernel (madvise MADV_DONTNEED) that
// this process no longer needs the pages of its executable's read-only
// mappings (code, read-only data): they leave its resident set and stay in
// the page cache, shared with every other process running the executable,
// and a page touched again is mapped again from there. Read-only mappings
// hold nothing the process wrote, so nothing is lost; the writable data
// segment is left alone. It does nothing if the executable or its
// mappings cannot be read.
func dropExecutablePages() {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[5] != exe || (f[1] != "r-xp" && f[1] != "r--p") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(a), uintptr(b-a), unix.MADV_DONTNEED)
	}
}
