//go:build unix

package jetstream

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir creates and exclusively locks the file at path; closing the file
// (or the end of the process, however it ends) releases the lock.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("store directory is in use by another server (its LOCK file is held)")
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
