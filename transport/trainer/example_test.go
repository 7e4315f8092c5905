package trainer_test

import (
	"bytes"
	"fmt"

	"github.com/shufflefl/shufflefl/transport/trainer"
)

// A trainer's answer to a train request, as it travels on the trainer's
// standard output, read back with the model's frame limit.
func ExampleReadFrame() {
	var pipe bytes.Buffer
	upd := trainer.Frame{Kind: trainer.KindUpdate, Header: []byte(`{"round":3,"client":17}`), Payload: []float32{0.25, -0.5, 0}}
	if err := trainer.WriteFrame(&pipe, upd); err != nil {
		panic(err)
	}
	fmt.Printf("% x\n", pipe.Bytes()[:9])
	f, err := trainer.ReadFrame(&pipe, trainer.FrameLimit(3))
	fmt.Println(f.Kind, string(f.Header), f.Payload, err)
	// Output:
	// 00 00 00 28 55 00 00 00 17
	// update {"round":3,"client":17} [0.25 -0.5 0] <nil>
}
