// Package rundir reads and writes the output directory of a shufflefl run
// (docs/OUTPUTS.md): config.yaml (the resolved settings, which rerun it),
// metrics.jsonl (one record per round), checkpoint.json and model.json (a
// resumable run), summary.json, the plots and run.log. Check refuses a
// used directory, Prepare replaces the shufflefl outputs in one with
// overwrite and keeps every other file. A damaged file is reported with
// its path and what is wrong (BadFile).
package rundir
