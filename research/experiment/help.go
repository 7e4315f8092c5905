package experiment

// The descriptions `shufflefl experiment --help` prints: what each kind of
// experiment runs and writes, kept beside the code that writes it.

// TablesHelp describes the paper experiments.
const TablesHelp = `Runs the comparison of one paper end to end with the same engine as
'shufflefl run', and writes under --out a markdown table per comparison
(results.md), an accuracy plot per table (accuracy-tN.png), run.log (all it
printed), and each run's own metrics.jsonl, summary.json, config.yaml, run.log
and plots in a subdirectory tN-LABEL. Every run's settings are checked, and
its engine built, before the first run starts. The --out directory must be
empty or absent unless --overwrite is given (see shufflefl run --help).
'shufflefl experiment NAME --help' shows the flags of frontier and dprivacy-*.
`

// FrontierHelp describes the frontier.
const FrontierHelp = `Draws test accuracy against the cumulative central epsilon of the whole run
(at --delta) for every private protocol: one run per protocol and target,
its local budgets calibrated before round 1 so that the run spends at most
the target (shufflefl run --target-epsilon). dp-central, whose Gaussian noise
is added by a trusted analyzer, is the reference a shuffle protocol tries to
approach; non-private FedAvg is the ceiling. Each protocol runs with its own
defaults ('shufflefl protocols NAME' lists them) unless --clients, --rounds,
--local-epochs or --clip override them.

Output (under --out, default out/experiment-frontier-DATASET): frontier.png
(accuracy against cumulative epsilon, log scale), results.md (one row per
run: target, cumulative (epsilon, delta), accuracy, seconds, settings),
run.log, and each run's own outputs in a subdirectory PROTOCOL-eTARGET. A run
the protocol cannot calibrate (a target below what it can reach, say) is a
row saying why; the others still run.

The default size (13 private protocols x 3 targets + the ceiling, 40 runs of
the protocols' defaults on Fashion-MNIST) took 6.5 minutes of wall time on 2
cores shared with other jobs, 10 minutes of CPU time; --protocols,
--targets, --clients and --rounds make it smaller or larger.

Exit status: 0 success, 2 invalid input (a flag, or no run can be
calibrated), 1 failure.
`

// DPrivacyHelp describes the outputs of the group-privacy experiments.
const DPrivacyHelp = `Writes under --out: results.md (tables beside the paper's numbers),
results.json (every run's summary and the first seed's per-round records),
PNG plots, and run.log. See docs/DPRIVACY.md.
`

// TablesExamples are the examples of `shufflefl experiment --help`.
const TablesExamples = `
Examples:
  shufflefl experiment flame --dataset mnist-10k --out out/flame-mnist
  shufflefl experiment apes --rounds 3 --only APES,UniS --out out/apes-quick
  shufflefl experiment eapes --dataset fashion-mnist --overwrite
  shufflefl experiment frontier --protocols ss-simple,apes,dp-central --targets 2,8
  shufflefl experiment dprivacy-synthetic --out out/dprivacy-synthetic
`

// FrontierExamples are the examples of the frontier's help.
const FrontierExamples = `
Examples:
  shufflefl experiment frontier
  shufflefl experiment frontier --protocols ss-simple,apes,dp-central --targets 1,2,4,8,16 --out out/frontier-three
  shufflefl experiment frontier --clients 20000 --rounds 20 --out out/frontier-big
`
