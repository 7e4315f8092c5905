// Package onnx encodes a model of package fl as an ONNX file: a serialized
// ModelProto (onnx.proto, IR version 7, the default operator set version
// 13) that ONNX runtimes, PyTorch's and TensorFlow's importers and
// onnx.checker read.
//
// Encode walks the model's specification (fl.ParseSpec of its Name) and
// emits one node per layer: Gemm for a dense layer, Conv, MaxPool, Relu,
// Tanh, Flatten and a final Softmax, with the layers' parameters as float32
// initializers named as in model.safetensors (fl.Tensors). The graph's
// input "input" is a batch [N, features] of feature vectors, as shufflefl
// stores examples; its output "probabilities" is [N, classes], the softmax
// of the logits, so argmax over axis 1 is the predicted class. A model that
// starts with a convolution or a pooling layer reshapes the input to
// [N, 1, side, side] (single-channel square images, NCHW), carries its
// convolution weights in ONNX's OIHW order (shufflefl stores HWIO) and
// transposes the activations back to shufflefl's channel-last order before
// flattening, so the dense weights are the run's own.
//
// The package does no I/O: Encode returns the bytes.
package onnx
