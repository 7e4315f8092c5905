// Package rundir runs the engine into the output directory of a shufflefl
// run and reads and writes that directory (docs/OUTPUTS.md): config.yaml
// (the resolved settings, which rerun it), metrics.jsonl (one record per
// round), checkpoint.json and model.json (a resumable run), summary.json,
// the plots and run.log.
//
// Execute is `shufflefl run` after its flags: it builds the engine (or
// restores it from a checkpoint), writes each round's record and
// checkpoint as the round ends, finishes the round in progress on SIGINT,
// shows the progress (Progress) and writes every output; CheckRun is the
// command's check of the settings, Help its help. Check refuses a used
// directory, Prepare replaces the shufflefl outputs in one with overwrite
// and keeps every other file. A damaged file is reported with its path and
// what is wrong (BadFile).
package rundir
