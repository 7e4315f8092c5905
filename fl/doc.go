// Package fl holds the machine-learning side of federated learning in
// shufflefl: the models, a client's local training (FedAvg, FedSGD and
// FedProx) and the evaluation of a global model.
//
// # Models and parameter layout
//
// A model's parameters are one flat []float64 vector: the global model that the
// protocols exchange, clip, perturb and average. Two models exist, both built by
// NewModel:
//
//   - "logreg": multinomial logistic (softmax) regression, z = Wᵀx + b, with
//     d = features·classes + classes parameters (7,850 on 28×28 images with 10
//     classes, as in FLAME and APES). Layout: W (features×classes, row-major,
//     w[k·classes+c] connects input k to class c), then b (classes).
//   - "mlp": a 784-128-10 style perceptron with one ReLU hidden layer of 128
//     units, z = W2ᵀ relu(W1ᵀx + b1) + b2, so d = features·128 + 128 +
//     128·classes + classes (101,770 on 28×28 images). Layout: W1 (features×128, row-major,
//     w[k·128+j]), b1 (128), W2 (128×classes, row-major), b2 (classes).
//
// Both are trained with the mean softmax cross-entropy of a minibatch. The
// exported Loss and Gradient methods are a float64 reference implementation
// (used by the tests against finite differences); training and evaluation run
// on float32 working copies with SIMD kernels: AVX-512 or AVX2+FMA assembly on
// amd64, chosen at run time with golang.org/x/sys/cpu, and portable Go loops
// elsewhere, on older CPUs, or with the purego build tag. Zero input features
// (and zero ReLU outputs) are skipped, which is exact and pays off on image
// data, where about half the pixels are 0; logistic regression with 10
// classes on AVX-512 instead uses dense kernels that process eight rows of W
// (80 floats, five ZMM registers) at a time, which is faster still. Data sets enter as Examples, a view
// of the feature matrix and labels of a data.Dataset, plus a list of row
// indices for a client's shard.
//
// Results are deterministic: the same inputs and generator state give the
// same bits, whatever the goroutine and whichever Trainer runs the client.
// The kernels round differently (FMA, summation order), so bit-for-bit
// equality holds for one build on one kind of CPU, not across kernel levels.
//
// # Local training
//
// Trainer.LocalUpdate is a client's local computation. In FedAvg mode
// (McMahan et al., 2017, Algorithm 1 ClientUpdate) it runs minibatch SGD from
// the global model for a number of epochs or steps and returns the model delta
// w_local − w_global; a positive Mu adds FedProx's proximal term
// μ/2·‖w − w_global‖² (Li et al., 2020), as APES does. In FedSGD mode it returns
// the gradient of the loss at the global model (on the whole shard, or on one
// random minibatch when the shard is larger than the batch size). Minibatch
// order is drawn from the caller's generator, so with a seeded per-client
// stream (rng.Stream(seed, rng.LabelTraining, round, client)) the result is
// bit-for-bit reproducible on a given build and CPU.
package fl
