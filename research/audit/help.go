package audit

// The help of each `shufflefl audit` subcommand, beside the code it
// describes.

// Help is the help of `shufflefl audit`: its subcommands, outputs and exit statuses.
const Help = `Usage: shufflefl audit SUBCOMMAND [flags]

Attacks and privacy auditing: what each mechanism and protocol actually
leaks, measured against its accountant's claim.

Subcommands:
  mechanism   distinguishing game of one local randomizer: eps_lower vs eps_claimed
  protocol    the same game through a whole shuffled round of a protocol
  canary      one-run audit with random canary clients (Steinke et al. 2023; Andrew et al.)
  inversion   gradient inversion of one client's report (analytic and DLG), image grid
  mia         membership inference against the trained global model (loss, calibrated)
  topk        what the SS-Topk shuffler learns about the top-k indexes (FLAME Def. 3)
  accountant  a finished run's statements against independent lower bounds (exit 3 if below)

Every subcommand prints a markdown report (--json: JSON) and, with --out
DIR, writes audit.md, audit.json and any images into DIR (refusing a
non-empty DIR unless --overwrite). Run 'shufflefl audit SUBCOMMAND --help'
for its flags. docs/AUDIT.md explains the methods and shows the results.

Exit status: 0 success, 1 internal failure, 2 bad arguments (an attack
asked of a model it does not apply to, too few trials for the requested
confidence, ...), with one line on stderr; 3 (audit accountant) a stated
figure below a lower bound.

Examples:
  shufflefl audit mechanism --mechanism laplace --epsilon 1 --trials 1000000
  shufflefl audit mechanism --mechanism laplace --epsilon 1 --miscalibrate 2 --trials 1000000 --json
  shufflefl audit protocol --protocol apes --epsilon 4 --trials 20000 --out out/audit-apes
  shufflefl audit inversion --model logreg --out out/inversion
  shufflefl run --rounds 2 --out out/my-run
  shufflefl audit accountant --run out/my-run
`

// MechanismHelp is the help of `shufflefl audit mechanism`; %s stands for the list of mechanisms (MechanismNames).
const MechanismHelp = `Usage: shufflefl audit mechanism --mechanism NAME --epsilon E [--delta D] [--miscalibrate F] --trials T [flags]

The distinguishing game of one local randomizer of package mechanism: T
draws on each of two inputs at the mechanism's full sensitivity, the first
half choosing a threshold test on the output, the second half measuring it;
Clopper-Pearson bounds at --confidence give
eps_lower = log((TPR_lo - delta)/FPR_hi). eps_lower above the claimed
epsilon means the mechanism is NOT (epsilon, delta)-DP (exit status 0; the
report says VIOLATION). --miscalibrate F builds the noise F times too small,
a negative control the audit must catch. Trials run in parallel and stream
into histograms: memory does not grow with T.

Mechanisms: %s (or "all").

Examples:
  shufflefl audit mechanism --mechanism laplace --epsilon 1 --trials 1000000
  shufflefl audit mechanism --mechanism gaussian --epsilon 1 --delta 1e-5 --miscalibrate 2 --trials 1000000 --json
  shufflefl audit mechanism --mechanism all --epsilon 2 --trials 1000000 --out out/audit-mech
`

// ProtocolHelp is the help of `shufflefl audit protocol` (ProtocolAudit).
const ProtocolHelp = `Usage: shufflefl audit protocol --protocol NAME|all --epsilon E [flags]

The distinguishing game through one whole round of a protocol: --clients
clients with --dim-dimensional updates; client 0 holds -C·1 or +C·1 (the
extreme neighbours of clipping to [-C, C]; dp-central: ±C/√d·1), every
other client a fixed update. Each trial runs every client's Encode, the
shuffler (padding, permutation) and the analyzer; the adversary scores what
the analyzer sees (the estimate; without a shuffler, client 0's own report).
eps_lower is compared with the round's central epsilon from the protocol's
own accountant (Protocol.Account). --miscalibrate F encodes with F times the
budget while claiming the budget (a negative control the audit must catch).

With --protocol all a second table follows: the tight game, the same game
at n = 2 clients and d = 1 coordinate (--tight-trials rounds per world; 0
skips it), where client 0's whole budget sits on one value and one other
client's noise blurs it: this is the game that catches a halved Laplace
scale, which ten clients' noise hides. Several protocols' claims are exact
there, and a 95% lower bound exceeds an exact claim 5% of the time, so the
tight table is read at the joint confidence 1 - (1 - --confidence)/m over
its m protocols (Bonferroni).

Examples:
  shufflefl audit protocol --protocol ldp-laplace --epsilon 2 --trials 20000
  shufflefl audit protocol --protocol all --epsilon 2 --dim 2 --clients 10 --trials 20000 --out out/audit-protocols
  shufflefl audit protocol --protocol dp-central --target-epsilon 4 --miscalibrate 2 --trials 20000
  shufflefl audit protocol --engine --protocol dp-central --target-epsilon 2 --clients 10 --trials 4000

With --engine the round is the engine's first round of a run on --dataset
and --model (all --clients take part): the canary is one sampled client
whose update is replaced through the engine's hooks, every trial rebuilds
the engine with a fresh NoiseSalt (only the mechanisms' randomness changes),
and the claim is the round's central epsilon from the engine's accountant.
`

// CanaryHelp is the help of `shufflefl audit canary` (OneRun).
const CanaryHelp = `Usage: shufflefl audit canary [--protocols LIST] [--canaries M] [flags]

One-run audit with random canary clients (Steinke, Nasr and Jagielski 2023;
Andrew et al.'s canary clients for FL). The first M clients are canaries:
each gets a secret random sign direction and is included with probability
1/2; an included canary's update is replaced (engine hook) by --scale times
the largest update clipping lets through in its direction, in every round
it takes part in; an excluded canary sends a zero update (a neighbour of the
canary under replace-one and, with dp-central's fixed denominator, under
add/remove). After the run each canary is scored by the cosine between
its direction and the final model delta; the --guesses highest are guessed
included and the --guesses lowest excluded. The number of correct guesses
gives eps_lower at --confidence (Steinke et al.), compared with the run's
cumulative central epsilon; Andrew et al.'s Gaussian-fit estimate is shown
beside it (an estimate, not a bound). A canary that the protocol's
clipping or sparsification would mostly erase is reported with a warning.

Examples:
  shufflefl audit canary --out out/canary
  shufflefl audit canary --protocols nonprivate,dp-central --target-epsilon 8 --dataset fashion-mnist --canaries 500 --clients 1000 --rounds 5
`

// InversionHelp is the help of `shufflefl audit inversion` (InversionStudy).
const InversionHelp = `Usage: shufflefl audit inversion [--model logreg|mlp] [--protocols LIST] [--epsilons LIST] [--nus LIST] [flags]

Gradient inversion of one client's report. Each target client holds one
image and sends the model delta of one SGD step from the global model (the
setting of DLG and of the group-privacy paper's Figure 5). Two attacks:
the exact analytic reconstruction of the input of the first fully connected
layer from its weight and bias gradients, and an optimisation attack (DLG /
Inverting Gradients: match the observed update from a dummy input by cosine
distance, label from the last bias gradient as in iDLG). Every protocol is
attacked at every epsilon on what the attacker sees (LDP and whole-report
shuffling: the client's own report; per-coordinate shuffling and dp-central:
the released mean of a round of --clients clients), and the group-privacy
per-layer Euclidean Laplace sanitizer at every noise multiplier nu.
Quality: MSE, PSNR, SSIM (mean over --targets images).

Writes inversion-protocols.png and inversion-nu.png (rows: truth, then one
row per setting; columns: the analytic reconstructions, then DLG's).

Examples:
  shufflefl audit inversion --out out/inversion
  shufflefl audit inversion --model mlp --protocols nonprivate,ldp-laplace --epsilons 10,1e6 --nus 0,0.001,0.1,1 --out out/inversion-mlp
`

// MIAHelp is the help of `shufflefl audit mia` (MembershipInference).
const MIAHelp = `Usage: shufflefl audit mia [--protocols LIST] [--epsilon E] [--target-epsilon E] [flags]

Membership inference against the trained global model. For each protocol a
model is trained with the engine on --clients x --samples-per-client
members (a small set, so that a non-private model overfits); the same
number of held-out test examples are the non-members. Attacks: the loss
threshold (members have lower loss) and its per-example difficulty
calibration (Watson et al. 2022: the loss minus the mean loss under
--references reference models trained the same way without the example).
Reported: ROC AUC, TPR at 1% and 0.1% FPR (0.1% needs over 1,000
non-members to be meaningful), and the largest AUC the run's claimed
central epsilon allows.

Examples:
  shufflefl audit mia --out out/mia
  shufflefl audit mia --protocols nonprivate,dp-central,ss-simple --epsilon 100 --target-epsilon 8 --rounds 40 --out out/mia
`

// TopkHelp is the help of `shufflefl audit topk` (TopkShuffler).
const TopkHelp = `Usage: shufflefl audit topk [--k K] [--nu NU] [flags]

What the SS-Topk shuffler learns. The engine trains with protocol ss-topk;
the shuffler sees each participant's l·k reported indexes (it needs them to
shuffle per dimension) and guesses which k are the true top-k: uniformly at
random (FLAME's adversary, expected success 1/l) and by popularity (the
indexes reported most often so far). Success rates, with 95% intervals,
are compared with nu·beta, FLAME Definition 3's cap on
Pr[I_j = 1 | reported] for an adversary with the uniform prior beta = k/d.

Examples:
  shufflefl audit topk --out out/topk
  shufflefl audit topk --k 157 --nu 2 --rounds 5 --model mlp
`

// AccountantHelp is the help of `shufflefl audit accountant` (CheckAccountant).
const AccountantHelp = `Usage: shufflefl audit accountant --run DIR [flags]

Recomputes a finished run's privacy statements against independent LOWER
bounds: exact figures for neighbouring pairs the statement covers, computed
without the run's accountant. DIR is the --out directory of a shufflefl run
(config.yaml, metrics.jsonl, summary.json). The cumulative statement after
the first and after the last round is checked:

  ldp-laplace, pldp, ldp-min   optimal composition (Kairouz et al.;
                               Murtagh-Vadhan, exact) of the d·t
                               per-coordinate eps_c-DP releases
  apes, unis, ss-simple        (uniform budgets) shuffled binary randomized
                               response of one coordinate (exact), and the
                               count of ones over all d·t shuffled releases
  every protocol below         the run's own mechanism: the user with the
                               largest budget at the ends of the range, the
                               others at its middle, and a test whose two
                               distributions are computed exactly
                               (protocol.LowerBounder; the same figure as
                               summary.json's lower_bound_epsilon):
    ss-simple, ss-double,      the count of values above an optimised
    ss-topk                    threshold over every value of the t rounds,
                               with the run's randomizer (FLAME; dummies in
                               their own class)
    apes, unis, pldp,          the count of values above a threshold, the
    ldp-min, ldp-laplace       run's Laplace or Clip-Laplace; personalized
                               budgets at the midpoint threshold, where
                               every other value counts with probability
                               1/2 whatever its budget
    e-apes                     the count of reports whose projection on one
                               coordinate is above a threshold (Gaussian)
    split-mix                  thresholds on the sum over the t rounds of
                               one coordinate's decoded sums and on the
                               largest round (Skellam shift, add/remove,
                               with its Poisson sampling)

The other protocols (dp-central, ldp-gaussian, d-privacy, no claim,
S-APES), runs with client sampling or sit-outs (but split-mix's), and
approximate statements are reported as not checked, with the reason.

Exit status: 0 every statement is at or above its lower bounds (or none
could be checked), 3 some statement is below a lower bound (one line per
violation on stderr), 1 internal failure, 2 bad arguments or an unreadable
run directory.

Examples:
  shufflefl run --protocol ss-double --epsilon 1 --option k=1 --option randomizer=1 --clients 1000 --rounds 1 --delta 1e-6 --out out/ssd
  shufflefl audit accountant --run out/ssd
`
