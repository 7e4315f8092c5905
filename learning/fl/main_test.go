package fl

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

var kernelsFlag = flag.String("fl.kernels", "", "force the kernel level for benchmarks: go, avx2 or avx512 (default: the best the CPU supports)")

func TestMain(m *testing.M) {
	flag.Parse()
	if *kernelsFlag != "" {
		l := map[string]int{"go": levelGo, "avx2": levelAVX2, "avx512": levelAVX512}[*kernelsFlag]
		if _, ok := map[string]bool{"go": true, "avx2": true, "avx512": true}[*kernelsFlag]; !ok || l > bestLevel {
			fmt.Fprintf(os.Stderr, "-fl.kernels=%s: unknown or not supported by this CPU/build\n", *kernelsFlag)
			os.Exit(2)
		}
		level, bestLevel = l, l
	}
	os.Exit(m.Run())
}
