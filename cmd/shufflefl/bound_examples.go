package main

// boundExamples are the examples of 'shufflefl bound SUBCOMMAND --help'
// (the flags after the subcommand's name); TestBoundExamplesRun runs each.
var boundExamples = map[string][]string{
	"erlingsson":   {"--eps0 0.5 --n 10000 --delta 1e-6"},
	"blanket":      {"--eps0 1 --n 100000 --delta 1e-6", "--eps0 1 --n 100000 --mech rgb --domain 2 --form closed"},
	"clones":       {"--eps0 4 --n 100000 --delta 1e-6", "--eps0 2 --n 10000 --rounds 10 --composition pld"},
	"best":         {"--compare --eps0 1 --n 10000 --delta 1e-8", "--eps-dist uniform2 --n 10000 --delta 1e-8"},
	"unis":         {"--eps-dist uniform2 --n 10000 --delta 1e-8"},
	"eon":          {"--eps-dist uniform2 --n 10000 --delta 1e-8", "--eps-dist gauss1 --n 10000 --delta 1e-8 --form closed"},
	"eapes":        {"--eps-dist eapes-uniform1 --n 1000 --delta 1e-5"},
	"flame-simple": {"--eps-l 78.5 --d 7850 --n 1000 --delta 5e-6", "--eps-l 1517 --d 7850 --n 2000 --delta 5e-8 --mech rgb --domain 2", "--eps-l 78.5 --d 7850 --n 1000 --delta 5e-6 --composition pld --rounds 10"},
	"flame-double": {"--eps-l 78.5 --d 7850 --k 157 --n 1000 --np 333 --delta 5e-6"},
	"flame-topk":   {"--n 1000 --np 333 --k 157 --d 7850"},
	"sapes":        {"--eps-c 0.01 --delta-c 1e-8 --b 1570"},
	"subsample":    {"--eps0 1 --q 0.01", "--eps0 1 --delta0 1e-6 --q 0.1 --method poisson"},
	"compose":      {"--eps0 0.5 --rounds 100 --delta-prime 1e-6"},
	"sgm":          {"--q 0.01 --sigma 1.1 --steps 1000 --delta 1e-5"},
}
