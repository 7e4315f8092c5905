// Package audit measures what shufflefl's privacy guarantees mean against
// real attacks, and checks the accountant with evidence it cannot fool.
//
// Empirical epsilon (lower bounds that must stay below the claims):
//
//   - MechanismGame: the distinguishing game of one local randomizer of
//     package mechanism on two chosen inputs. Trials run in parallel and
//     stream into fixed histograms (memory independent of the number of
//     trials); the first half of the trials chooses a threshold test, the
//     second half measures it, and Clopper-Pearson bounds at the requested
//     confidence give eps_lower = log((TPR_lo - delta)/FPR_hi), in both
//     directions of the test (Jagielski, Ullman and Oprea 2020; Nasr et al.
//     2021).
//   - ProtocolGame: the same game through a whole shuffled round of a
//     protocol (one client's update changed between the two worlds, every
//     other client's fixed), observing what the analyzer sees (its
//     estimate), against the round's central epsilon from Protocol.Account.
//     EngineGame plays it through the engine's first round instead (real
//     data, sampling and training), rebuilding the engine with a fresh
//     runtime.Hooks.NoiseSalt per trial so that only the mechanisms'
//     randomness changes.
//   - OneRun: the one-run audit of Steinke, Nasr and Jagielski (2023) with
//     canary clients in the manner of Andrew et al. (2024): m canary
//     clients, each included at random, scored by the cosine between its
//     secret update direction and the final model delta.
//
// Attacks (what an adversary reconstructs or infers):
//
//   - InvertFC: the exact analytic reconstruction of a fully connected
//     layer's input from its weight and bias gradients; Optimize: a
//     DLG / Inverting-Gradients style attack that matches the observed update
//     from a dummy input, with the label recovered from the last bias
//     gradient (iDLG). Quality: MSE, PSNR and SSIM.
//   - MembershipInference: the loss-threshold attack and its per-example
//     difficulty-calibrated variant (Watson et al. 2022) against a trained
//     global model, with ROC AUC and TPR at low FPR.
//   - TopkShuffler: the success rate of an honest-but-curious shuffler that
//     guesses which indices of an SS-Topk report are true top-k, against
//     the nu of FLAME Definition 3.
//
// Everything here is pure computation with *rand.Rand inputs; files and
// images are written by the CLI (cmd/shufflefl audit).
package audit
