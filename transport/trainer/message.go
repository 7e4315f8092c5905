package trainer

import (
	"encoding/json"
	"fmt"
)

// Hello is the header of the first frame shufflefl sends: what the trainer
// needs to build the model and load the same data shufflefl would train on.
// Its payload is empty.
type Hello struct {
	// Protocol is Version.
	Protocol int `json:"protocol"`
	// Dim is the number of model parameters: the length of every model and
	// update payload.
	Dim int `json:"dim"`
	// Layers are the model's tensors, in the order of the flat parameter
	// vector, named and shaped as in the run's model.safetensors.
	Layers []Layer `json:"layers"`
	// Model is the run's --model (a preset name, "mlp:W1,W2,…" or a layer
	// list), and Spec its layers when it parses as a specification.
	Model string      `json:"model"`
	Spec  []LayerSpec `json:"spec,omitempty"`
	// Dataset and DataDir name the run's data set and directory ("": the
	// data set's default). Features and Classes are the input width and the
	// number of classes.
	Dataset  string `json:"dataset"`
	DataDir  string `json:"data_dir"`
	Features int    `json:"features"`
	Classes  int    `json:"classes"`
	// TrainExamples is the size of the training set the example indices
	// refer to, and TrainLabelsSHA256 the hex SHA-256 of its labels, one
	// byte each in index order: a trainer that loaded other data, or the
	// same data in another order, can tell before it trains.
	TrainExamples     int    `json:"train_examples"`
	TrainLabelsSHA256 string `json:"train_labels_sha256"`
	// Clients are the client ids this process serves, as inclusive ranges
	// [first, last].
	Clients [][2]int `json:"clients"`
	// Seed is the run's seed.
	Seed uint64 `json:"seed"`
}

// Layer is one tensor of the model: parameters [Offset, Offset+product(Shape))
// of the flat vector, row-major.
type Layer struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Shape  []int  `json:"shape"`
}

// LayerSpec is one layer of a model specification (package fl's
// LayerSpec): only the fields of its type are set.
type LayerSpec struct {
	Type    string `json:"type"`
	Units   int    `json:"units,omitempty"`
	Filters int    `json:"filters,omitempty"`
	Kernel  int    `json:"kernel,omitempty"`
	Stride  int    `json:"stride,omitempty"`
	Padding int    `json:"padding,omitempty"`
	Size    int    `json:"size,omitempty"`
}

// Ready is the trainer's answer to Hello.
type Ready struct {
	// Protocol is the version the trainer speaks; it must be Version.
	Protocol int `json:"protocol"`
	// Name describes the trainer (free text, for logs).
	Name string `json:"name,omitempty"`
	// Evaluate says that the trainer answers evaluate requests; shufflefl
	// sends none to a trainer that does not set it.
	Evaluate bool `json:"evaluate,omitempty"`
}

// TrainRequest is the header of a train frame; its payload is the global
// model (Dim float32 values).
type TrainRequest struct {
	Round  int `json:"round"`
	Client int `json:"client"`
	// Indices are the client's examples: rows of the training set Hello
	// describes.
	Indices []int `json:"indices"`
	// Local is the local training configuration.
	Local LocalConfig `json:"local"`
	// Seed seeds the client's local randomness (minibatch order) for this
	// round: a trainer that uses it is reproducible.
	Seed uint64 `json:"seed"`
}

// LocalConfig mirrors package fl's LocalConfig. In mode "fedavg" the update
// is the model delta w_local − w_global after Epochs passes (or Steps SGD
// steps when Epochs is 0) of minibatch SGD with learning rate LR and
// FedProx coefficient Mu; in mode "fedsgd" it is the gradient of the mean
// loss at the global model on one minibatch of Batch examples (the whole
// shard if it is smaller).
type LocalConfig struct {
	Mode   string  `json:"mode"`
	Epochs int     `json:"epochs"`
	Steps  int     `json:"steps"`
	Batch  int     `json:"batch"`
	LR     float64 `json:"lr"`
	Mu     float64 `json:"mu"`
}

// UpdateHeader is the header of an update frame; its payload is the update
// (Dim float32 values).
type UpdateHeader struct {
	// Round and Client echo the request's.
	Round  int `json:"round"`
	Client int `json:"client"`
	// Steps and Loss describe the local training (optional): the number of
	// minibatch steps and their mean loss.
	Steps int     `json:"steps,omitempty"`
	Loss  float64 `json:"loss,omitempty"`
}

// EvaluateRequest is the header of an evaluate frame; its payload is the
// model to evaluate (Dim float32 values). The trainer evaluates it on the
// run's test set (Split "test"), which it loads itself: Examples and
// LabelsSHA256 (the hex SHA-256 of the test labels, one byte each in
// order) let it check that it holds the same examples as shufflefl.
type EvaluateRequest struct {
	// Round is the round whose model this is.
	Round        int    `json:"round"`
	Split        string `json:"split"`
	Examples     int    `json:"examples"`
	LabelsSHA256 string `json:"labels_sha256"`
}

// EvaluateResult is the header of a metrics frame, the answer to an
// evaluate request; its payload is empty.
type EvaluateResult struct {
	// Round echoes the request's, Examples is the number of examples
	// evaluated (it must be the request's).
	Round    int `json:"round"`
	Examples int `json:"examples"`
	// Accuracy is the fraction of examples whose predicted class (the
	// largest logit) is the label; Loss the mean softmax cross-entropy.
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
}

// ErrorMessage is the header of an error frame: the trainer could not
// serve the request.
type ErrorMessage struct {
	Message string `json:"message"`
}

// header encodes v as a frame header.
func header(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // the message types always marshal
		panic(fmt.Sprintf("trainer: encoding a header: %v", err))
	}
	return b
}

// decode parses f's header into v, refusing a frame of another kind.
func decode(f Frame, want Kind, v any) error {
	if f.Kind != want {
		return fmt.Errorf("%w: got a %s frame, want %s", ErrFrame, f.Kind, want)
	}
	if err := json.Unmarshal(f.Header, v); err != nil {
		return fmt.Errorf("%w: %s header: %v", ErrFrame, f.Kind, err)
	}
	return nil
}
