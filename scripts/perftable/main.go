//go:build ignore

// Command perftable runs the hot-path benchmarks of shufflefl and writes
// docs/PERFORMANCE.md: one table per section, each cell the median of
// -count runs, and ratio columns taken within one run (the i-th result of
// a benchmark against the i-th result of its reference, then the median of
// those ratios), which is what stays meaningful on a shared machine.
//
// Run it through scripts/perf-table.sh (from the repository root):
//
//	scripts/perf-table.sh -count 5
//
// The command line given is printed at the top of the document; the raw
// `go test` output is kept with -raw FILE.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// ratio is a column dividing one benchmark's metric by a reference's.
type ratio struct {
	label  string
	match  string // regexp on the benchmark name (no "Benchmark" prefix, no -P suffix)
	ref    string // the reference's name: match's replacement template
	metric string
	invert bool // ref / bench (a speed-up) instead of bench / ref
}

// section is one `go test -bench` command and its table.
type section struct {
	title     string
	intro     string
	pkg       string
	bench     string
	benchtime string
	metrics   []string          // columns, in order; absent metrics are left blank
	ratios    []ratio           // ratio columns after the metrics
	targets   map[string]string // a target per benchmark name, as its last column
	skip      string            // regexp of benchmarks measured (ratio references) but not shown
}

var sections = []section{
	{
		title: "Local randomizers: one sample",
		intro: "One op is one sample at input 0.5 with the seeded PCG or the ChaCha8 CSPRNG. `floor` is one " +
			"uniform float64 and one `math.Log` through the same indirect call (the ×floor reference). " +
			"`clip-laplace` is Clip-Laplace at ε = 1 (its worst case), `eps0.5` the middle of APES's Uniform2 " +
			"budgets, `eps4` the Laplace-proposal sampler; `-secure` rows are the floating-point-safe samplers " +
			"(`--secure-noise`), ×textbook against the textbook sampler. cpu-ns/op is the thread's own CPU time.",
		pkg: "./privacy/mechanism", bench: "^Benchmark(Floor|Sample)$", benchtime: "200000x",
		metrics: []string{"cpu-ns/op"},
		skip:    `^Floor/|/cryptorand$`,
		ratios: []ratio{
			{"×floor", `^Sample/[^/]+/(\w+)$`, "Sample/floor/$1", "cpu-ns/op", false},
			{"×textbook", `^Sample/(.+)-secure/(\w+)$`, "Sample/$1/$2", "cpu-ns/op", false},
		},
		targets: map[string]string{
			"Sample/laplace/pcg":             "≤ 2× floor",
			"Sample/clip-laplace/pcg":        "≤ 3× floor",
			"Sample/laplace-secure/pcg":      "≤ 4× floor",
			"Sample/gaussian-secure/pcg":     "≤ 4× floor",
			"Sample/clip-laplace-secure/pcg": "≤ 4× floor",
		},
	},
	{
		title: "Local randomizers: one whole update",
		intro: "One op perturbs one update in place: d = 7,850 (logistic regression; PCG rows) and " +
			"d = 101,770 (the papers' MNIST MLP), with the seeded PCG and the ChaCha8 CSPRNG of a deployment.",
		pkg: "./privacy/mechanism", bench: "^BenchmarkPerturbUpdate$", benchtime: "20x",
		metrics: []string{"cpu-ns/op"},
		skip:    `^PerturbUpdate/d=7850/.*/chacha8$|eps0\.5|eps4`,
		ratios: []ratio{
			{"×textbook", `^PerturbUpdate/(d=\d+)/(.+)-secure/(\w+)$`, "PerturbUpdate/$1/$2/$3", "cpu-ns/op", false},
			{"×pcg", `^PerturbUpdate/(d=\d+)/([^/]+)/chacha8$`, "PerturbUpdate/$1/$2/pcg", "cpu-ns/op", false},
		},
		targets: map[string]string{
			"PerturbUpdate/d=101770/laplace-secure/chacha8":      "< 2 ms",
			"PerturbUpdate/d=101770/gaussian-secure/chacha8":     "< 2 ms",
			"PerturbUpdate/d=101770/clip-laplace-secure/chacha8": "< 2 ms",
		},
	},
	{
		title: "Local training",
		intro: "`LocalUpdateRound`: one FedAvg round's local updates, logistic regression, 10,000 clients of 6 " +
			"Fashion-MNIST examples, one epoch, batch 10 (PyTorch on CPU: 1.3 s for the whole round). `Train`: one " +
			"epoch over 600 examples per op and goroutine; ×1 goroutine is two trainers' wall throughput against one.",
		pkg: "./learning/fl", bench: "^Benchmark(LocalUpdateRound|Train)$/^(logreg|mlp)", benchtime: "0.5s",
		metrics: []string{"ns/op", "µs/client", "cpu-µs/client", "examples/s", "examples/cpu-s"},
		ratios: []ratio{
			{"×1 goroutine", `^Train/(\w+)/(batch=\d+)/goroutines=2$`, "Train/$1/$2/goroutines=1", "examples/s", false},
		},
		targets: map[string]string{
			"LocalUpdateRound/logreg/clients=10000": "< 1.3 s",
			"Train/mlp/batch=10/goroutines=1":       "≥ 40,000 ex/s",
			"Train/mlp/batch=32/goroutines=1":       "≥ 110,000 ex/s",
		},
	},
	{
		title: "Training kernels by SIMD level",
		intro: "The kernels on one real image (its non-zero pixels against 784 weight rows) at every level " +
			"the machine has; ×go is the speed-up over the portable Go kernels (`-tags purego`, non-amd64).",
		pkg: "./learning/fl", bench: "^BenchmarkKernels$", benchtime: "0.2s",
		metrics: []string{"ns/op", "GMAC/s"},
		skip:    `/n=10/`,
		ratios: []ratio{
			{"×go", `^Kernels/(avx2|avx512)/(.+)$`, "Kernels/go/$2", "ns/op", true},
		},
	},
	{
		title: "One simulated round",
		intro: "A whole engine round (training, noise, shuffle, aggregation, evaluation, accounting), Fashion-MNIST, " +
			"d = 7,850, 10,000 clients of 6 examples, all cores; the -s/round columns split it by stage; B/op " +
			"shows memory does not grow as n × d (628 MB).",
		pkg: "./driver/sim", bench: "^Benchmark(Round|APESRound)$//^clients=10000", benchtime: "2x",
		metrics: []string{"ns/op", "clients-s/round", "shuffle-s/round", "analyze-s/round", "account-s/round", "eval-s/round", "noise-share", "noise-cpu-share", "B/op"},
		targets: map[string]string{
			"Round/nonprivate/clients=10000,m=6,d=7850": "< 1.3 s",
			"Round/apes/clients=10000,m=6,d=7850":       "≤ 2 s",
			"Round/ss-double/clients=10000,m=6,d=7850":  "≤ 2 s",
			"APESRound/apes/clients=10000,m=6,d=7850":   "≤ 2 s",
		},
	},
	{
		title: "Target calibration",
		intro: "`sim.New` for APES with 10,000 clients of Uniform2 budgets, d = 7,850, 10 rounds, " +
			"`--target-epsilon 5 --delta 1e-6`, which the calibration dominates.",
		pkg: "./driver/sim", bench: "^BenchmarkCalibrateTarget$", benchtime: "1x",
		metrics: []string{"ns/op"},
		targets: map[string]string{"CalibrateTarget": "< 5 s"},
	},
	{
		title: "The deployed shuffler",
		intro: "`Shuffler`: whole rounds through one shuffler at d = 7,850 (pre-sealed, pre-signed reports, the " +
			"fsynced inbox, dummies, permutation, saved batch, forward over mutual TLS); msgs/s counts every " +
			"message, dummies included; ss-double pads 100 reports of k = 157 to 3,333 per coordinate. `Dummies`: " +
			"sealing dummies; ×1 worker is all cores against one.",
		pkg: "./driver/deploy", bench: "^Benchmark(Shuffler|Dummies)$", benchtime: "1x",
		metrics: []string{"ns/op", "msgs/s", "msgs/round", "accept-cpu-s/round", "close+fwd-cpu-s/round", "dummies/s"},
		ratios: []ratio{
			{"×1 worker", `^Dummies/workers=([2-9]|\d\d+)$`, "Dummies/workers=1", "dummies/s", false},
		},
		targets: map[string]string{"Shuffler/ss-simple": "≥ 100,000 msg/s"},
	},
	{
		title: "Durable storage",
		intro: "One fsynced SQLite commit per op unless stated ([DURABILITY.md](DURABILITY.md)): `FsyncBaseline` is " +
			"the disk's floor; `ChargeWithReport` a charge with a 502 KB sealed report; `InboxAccept/msgs=M/batch=B` " +
			"B reports of M messages per transaction; `AcceptorParallel` 64 concurrent submitters with and without " +
			"group commit; `ReleaseRound` a release with an 814 KB checkpoint.",
		pkg: "./transport/store", bench: "^Benchmark(FsyncBaseline|LedgerCharge|ChargeWithReport|InboxAccept|AcceptorParallel|ReleaseRound)$", benchtime: "0.5s",
		metrics: []string{"ns/op", "fsyncs/s", "appends/s", "charges/s", "reports/s", "releases/s"},
		ratios: []ratio{
			{"×fsync", `^(LedgerCharge|InboxAccept/msgs=1/batch=1|AcceptorParallel/group=false)$`, "FsyncBaseline/overwrite", "ns/op", false},
			{"×no group", `^AcceptorParallel/group=true$`, "AcceptorParallel/group=false", "reports/s", false},
			{"×batch=1", `^InboxAccept/(msgs=\d+)/batch=\d+$`, "InboxAccept/$1/batch=1", "reports/s", false},
		},
	},
	{
		title: "Sealing and opening",
		intro: "HPKE sealing to the analyzer: one coordinate message or one whole report, X25519 (default) and " +
			"the X-Wing post-quantum hybrid; `AlternativeKEM` is plain `crypto/hpke` with P-256. ×x25519 is " +
			"against the same operation with X25519.",
		pkg: "./transport/seal", bench: "^Benchmark(Seal|Open|Report|AlternativeKEM)$", benchtime: "200x",
		metrics: []string{"ns/op", "B/msg", "B/enc"},
		ratios: []ratio{
			{"×x25519", `^(Seal|Open)/suite=xwing/(.+)$`, "$1/suite=x25519/$2", "ns/op", false},
			{"×x25519", `^Report/(seal|open)/suite=xwing/(.+)$`, "Report/$1/suite=x25519/$2", "ns/op", false},
			{"×x25519", `^AlternativeKEM/(seal|open)/p256$`, "AlternativeKEM/$1/x25519", "ns/op", false},
		},
	},
	{
		title: "Accounting",
		intro: "Amplification bounds (`amplify`: the numerical clone bound at ε0 = 4, Echo-of-Neighbors " +
			"and E-APES over Uniform2 budgets), privacy loss distributions (`pld`) and the run's " +
			"accountant (`account`: k compositions of the shuffled clone pair, planned).",
		pkg:       "./privacy/amplify ./privacy/pld ./privacy/account",
		bench:     "^Benchmark(ClonesNumerical|EoNNumerical|EoNClosedForm|EAPES|SampledGaussian1000Steps|ShuffleDimsRounds|ShuffleDimsRoundsDefaultInterval|AccountantPLDShuffle)$",
		benchtime: "3x",
		metrics:   []string{"ns/op", "epsilon"},
		targets: map[string]string{
			"ClonesNumerical/n=1000000":     "< 50 ms",
			"EoNNumerical/n=1000000":        "< 1 s",
			"EAPES/n=1000000":               "< 1 s",
			"SampledGaussian1000Steps":      "< 0.5 s",
			"ShuffleDimsRounds":             "< 2 s",
			"AccountantPLDShuffle/k=100000": "< 1 s",
		},
	},
}

// result is one benchmark's values per metric, in the order of its runs.
type result struct {
	name   string
	values map[string][]float64
}

func main() {
	count := flag.Int("count", 3, "runs of every benchmark (the `go test -count`)")
	only := flag.String("only", "", "run only the sections whose title contains this (for trying the script)")
	raw := flag.String("raw", "", "also write the raw `go test` output to this file")
	from := flag.String("from", "", "render the document from this -raw file instead of running the benchmarks")
	cmdline := flag.String("cmd", "", "the command line to print at the top (set by scripts/perf-table.sh)")
	flag.Parse()
	if *count < 1 {
		fail(fmt.Errorf("-count %d: need at least 1 run", *count))
	}
	var saved map[string][]byte
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			fail(err)
		}
		saved = splitRaw(b)
	}
	var rawOut io.Writer = io.Discard
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		rawOut = f
	}
	var doc bytes.Buffer
	cpu := ""
	for _, s := range sections {
		if *only != "" && !strings.Contains(s.title, *only) {
			continue
		}
		args := s.args(*count)
		out, ok := saved[s.title]
		if saved == nil {
			fmt.Fprintf(os.Stderr, "perftable: %s\n", strings.Join(args, " "))
			var err error
			out, err = goTest(args)
			fmt.Fprintf(rawOut, "%s%s\n%s", rawMarker, s.title, out)
			if err != nil {
				fail(fmt.Errorf("%s: %w\n%s", s.title, err, out))
			}
		} else if !ok {
			fail(fmt.Errorf("%s: section %q is not in %s", *from, s.title, *from))
		}
		results, c := parse(out)
		if c != "" {
			cpu = c
		}
		if len(results) == 0 {
			fail(fmt.Errorf("%s: no benchmark matched %q in %s", s.title, s.bench, s.pkg))
		}
		s.write(&doc, args, results)
	}
	if *cmdline == "" {
		*cmdline = "go run scripts/perftable/main.go " + strings.Join(os.Args[1:], " ")
	}
	fmt.Printf("# Performance\n\n")
	fmt.Printf("Generated by `%s` from the repository root; rerun it rather than edit this file.\n\n", *cmdline)
	fmt.Printf("Machine: %d cores (%s), %s %s/%s. The machine may be shared, so absolute times are noisy: "+
		"each cell is the median of %d runs, and a ratio column (×…) is the median over the runs of the "+
		"ratio taken within one run, the figure to compare across machines. A target column gives the "+
		"requirement a row answers.\n\n",
		runtime.NumCPU(), orUnknown(cpu), runtime.Version(), runtime.GOOS, runtime.GOARCH, *count)
	fmt.Print(doc.String())
}

// rawMarker starts each section's output in a -raw file.
const rawMarker = "# perftable section: "

// splitRaw splits a -raw file into its sections' outputs.
func splitRaw(b []byte) map[string][]byte {
	m := map[string][]byte{}
	title := ""
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if t, ok := bytes.CutPrefix(line, []byte(rawMarker)); ok {
			title = strings.TrimSpace(string(t))
			continue
		}
		m[title] = append(m[title], line...)
	}
	return m
}

func orUnknown(s string) string {
	if s == "" {
		return "CPU model unknown"
	}
	return s
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "perftable: %v\n", err)
	os.Exit(1)
}

// args is the section's `go test` command.
func (s section) args(count int) []string {
	a := []string{"go", "test", "-run", "^$", "-bench", s.bench, "-benchtime", s.benchtime,
		"-count", strconv.Itoa(count), "-benchmem"}
	return append(a, strings.Fields(s.pkg)...)
}

func goTest(args []string) ([]byte, error) {
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads `go test -bench` output: the results in order of first
// appearance, and the "cpu:" line.
func parse(out []byte) ([]*result, string) {
	var results []*result
	byName := map[string]*result{}
	cpu := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, "cpu: "); ok {
			cpu = strings.TrimSpace(c)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		r := byName[name]
		if r == nil {
			r = &result{name: name, values: map[string][]float64{}}
			byName[name] = r
			results = append(results, r)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			r.values[f[i+1]] = append(r.values[f[i+1]], v)
		}
	}
	return results, cpu
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pairedRatio is the median over runs i of a[i]/b[i], or of b[i]/a[i]
// when invert is set.
func pairedRatio(a, b []float64, invert bool) float64 {
	if invert {
		a, b = b, a
	}
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return median(r)
}

func (s section) write(w io.Writer, args []string, results []*result) {
	fmt.Fprintf(w, "## %s\n\n", s.title)
	fmt.Fprintf(w, "```sh\n%s\n```\n\n%s\n\n", shellQuote(args), s.intro)
	byName := map[string]*result{}
	for _, r := range results {
		byName[r.name] = r
	}
	var metrics []string
	for _, m := range s.metrics {
		for _, r := range results {
			if len(r.values[m]) > 0 {
				metrics = append(metrics, m)
				break
			}
		}
	}
	var labels []string
	for _, q := range s.ratios {
		if !slices.Contains(labels, q.label) {
			labels = append(labels, q.label)
		}
	}
	header := append(append([]string{"benchmark"}, metrics...), labels...)
	if len(s.targets) > 0 {
		header = append(header, "target")
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	var skip *regexp.Regexp
	if s.skip != "" {
		skip = regexp.MustCompile(s.skip)
	}
	for _, r := range results {
		if skip != nil && skip.MatchString(r.name) {
			continue
		}
		row := []string{"`" + r.name + "`"}
		for _, m := range metrics {
			row = append(row, format(m, median(r.values[m])))
		}
		for _, l := range labels {
			row = append(row, s.ratioCell(l, r, byName))
		}
		if len(s.targets) > 0 {
			row = append(row, s.targets[r.name])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
}

func (s section) ratioCell(label string, r *result, byName map[string]*result) string {
	for _, q := range s.ratios {
		re := regexp.MustCompile(q.match)
		if q.label != label || !re.MatchString(r.name) {
			continue
		}
		ref := byName[re.ReplaceAllString(r.name, q.ref)]
		if ref == nil {
			continue
		}
		v := pairedRatio(r.values[q.metric], ref.values[q.metric], q.invert)
		if !math.IsNaN(v) {
			return fmt.Sprintf("%.2f", v)
		}
	}
	return ""
}

// format prints a metric's median: times with a unit, counts grouped.
func format(metric string, v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	switch metric {
	case "ns/op", "cpu-ns/op":
		return duration(v)
	case "B/op":
		return bytesize(v)
	}
	if strings.HasSuffix(metric, "-s/round") {
		return duration(v * 1e9)
	}
	switch {
	case strings.HasSuffix(metric, "-share"):
		return fmt.Sprintf("%.0f%%", 100*v)
	case math.Abs(v) >= 1000:
		return group(int64(math.Round(v)))
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

func bytesize(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.3g GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.3g MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.3g KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()*?[] ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
