package onnx_test

import (
	"fmt"
	"log"

	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/onnx"
)

// ExampleEncode encodes a two-layer network of 4 inputs and 3 classes (its
// weights zero, as a run's model.json would give them trained) as an ONNX
// file, ready for os.WriteFile.
func ExampleEncode() {
	m, err := fl.NewModel("mlp:8", 4, 3)
	if err != nil {
		log.Fatal(err)
	}
	b, err := onnx.Encode(m, make([]float64, m.Dim()), map[string]string{"dataset": "iris"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d parameters, %d bytes of ONNX (IR %d, opset %d)\n", m.Name(), m.Dim(), len(b), onnx.IRVersion, onnx.Opset)
	// Output: mlp:8: 67 parameters, 758 bytes of ONNX (IR 7, opset 13)
}
