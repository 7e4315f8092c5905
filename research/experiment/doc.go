// Package experiment reproduces the papers' comparisons and draws the
// privacy–accuracy frontier; `shufflefl experiment` is its command line.
// Each experiment checks its settings first (PlanTables, PlanFrontier,
// DPrivacyExperiment.Check), then runs, writes its outputs (results.md,
// plots, and per run what `shufflefl run` writes, or results.json) into a
// directory the caller has prepared (Output), and returns a Result: the
// markdown and the runs behind it.
//
//   - Paper tables (flame, apes, eapes; Papers, PlanTables): the papers'
//     settings as engine runs, one markdown table and accuracy plot per
//     comparison.
//   - The frontier (PlanFrontier): accuracy against the cumulative central
//     epsilon, one run per private protocol and target.
//   - The group-privacy paper (RunDPrivacy): dprivacy-rotated runs
//     clustered FL on the engine (protocols ifca / ifca-dp).
//     dprivacy-synthetic and dprivacy-regression run on the naive
//     reference simulation ifca/ifcaref instead, and say so: they train
//     regression models (a linear model and a 2-layer ReLU network on
//     squared error, the paper's Eq. 10), and the engine trains only the
//     classifiers of package fl (cross-entropy, accuracy). The reference
//     is checked against the engine round for round (ifcaref's
//     engine_test.go).
//
// Engine runs are checked and written through Runs; DirRuns implements it
// with `shufflefl run`'s own code (package rundir), so that every run of an
// experiment is one `shufflefl run` could make. The options bind to the
// command's flags (RegisterFlags, EngineFlags).
package experiment
