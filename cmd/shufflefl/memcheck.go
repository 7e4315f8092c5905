package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
)

// runBytesPerClient is the least memory a simulated run keeps per client
// of its population, whatever the protocol: the client's budget, its place
// in the partition and the sampler's state. Measured with
// `/usr/bin/time -f %M shufflefl run --partition sampled
// --samples-per-client 2 --dataset fashion-mnist-sample --rounds 1
// --clients N` at N = 10^7 and 3·10^7: 66 bytes a client between the two
// (peak RSS 1.34 and 2.66 GB); a charging protocol's ledger adds 288
// bytes a released client on top.
const runBytesPerClient = 64

// checkRunMemory refuses, before anything is loaded, a run whose
// population alone cannot fit in the memory this machine has available
// (Linux's MemAvailable; nothing is checked where it cannot be read).
func checkRunMemory(cfg round.Config) error {
	avail, ok := availableMemory()
	if !ok {
		return nil
	}
	need := float64(cfg.Clients+cfg.HoldoutClients) * runBytesPerClient
	if need > float64(avail) {
		return checks.Invalidf("--clients %d: a run keeps at least %d bytes a client (%.3g GB), more than the %.3g GB this machine has available",
			cfg.Clients, runBytesPerClient, need/1e9, float64(avail)/1e9)
	}
	return nil
}

// availableMemory returns MemAvailable from /proc/meminfo in bytes.
func availableMemory() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
