//go:build !unix

package jetstream

import (
	"fmt"
	"os"
)

// lockDir creates the file at path. Without flock(2) it cannot stop a second
// server from using the same directory.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f, nil
}
