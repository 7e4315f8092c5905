package onnx

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx.proto (github.com/onnx/onnx, onnx/onnx.proto) that
// the encoder writes, by message.
const (
	// ModelProto
	modelIRVersion     = 1
	modelProducerName  = 2
	modelProducerVer   = 3
	modelDocString     = 6
	modelGraph         = 7
	modelOpsetImport   = 8
	modelMetadataProps = 14

	// OperatorSetIdProto
	opsetDomain  = 1
	opsetVersion = 2

	// StringStringEntryProto
	entryKey   = 1
	entryValue = 2

	// GraphProto
	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphDocString   = 10
	graphInput       = 11
	graphOutput      = 12

	// NodeProto
	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	// AttributeProto
	attrName = 1
	attrI    = 3
	attrInts = 8
	attrType = 20

	// AttributeProto.AttributeType
	attrTypeInt  = 2
	attrTypeInts = 7

	// TensorProto
	tensorDims     = 1
	tensorDataType = 2
	tensorName     = 8
	tensorRawData  = 9

	// TensorProto.DataType
	dataFloat = 1
	dataInt64 = 7

	// ValueInfoProto
	valueName = 1
	valueType = 2

	// TypeProto, TypeProto.Tensor, TensorShapeProto and its Dimension
	typeTensorType = 1
	tensorElemType = 1
	tensorShape    = 2
	shapeDim       = 1
	dimValue       = 1
	dimParam       = 2
)

// appendString appends field num as a length-delimited string.
func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMessage appends field num holding the encoded message m.
func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// appendInt appends field num as a varint (int32, int64 or enum).
func appendInt(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// appendPackedInts appends the repeated int64 field num, packed (proto3's
// encoding of repeated scalars, which proto2 parsers also accept).
func appendPackedInts(b []byte, num protowire.Number, vs []int64) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return appendMessage(b, num, p)
}

// entry is a StringStringEntryProto.
func entry(key, value string) []byte {
	return appendString(appendString(nil, entryKey, key), entryValue, value)
}

// opset is an OperatorSetIdProto of the default domain.
func opset(version int64) []byte {
	return appendInt(appendString(nil, opsetDomain, ""), opsetVersion, version)
}

// intAttr is an AttributeProto of type INT.
func intAttr(name string, v int64) []byte {
	b := appendString(nil, attrName, name)
	b = appendInt(b, attrI, v)
	return appendInt(b, attrType, attrTypeInt)
}

// intsAttr is an AttributeProto of type INTS.
func intsAttr(name string, vs ...int64) []byte {
	b := appendString(nil, attrName, name)
	b = appendPackedInts(b, attrInts, vs)
	return appendInt(b, attrType, attrTypeInts)
}

// node is a NodeProto of the default domain.
func node(name, op string, inputs, outputs []string, attrs ...[]byte) []byte {
	var b []byte
	for _, in := range inputs {
		b = appendString(b, nodeInput, in)
	}
	for _, out := range outputs {
		b = appendString(b, nodeOutput, out)
	}
	b = appendString(b, nodeName, name)
	b = appendString(b, nodeOpType, op)
	for _, a := range attrs {
		b = appendMessage(b, nodeAttribute, a)
	}
	return b
}

// floatTensor is a TensorProto of type FLOAT with its data little-endian in
// raw_data.
func floatTensor(name string, dims []int64, data []float32) []byte {
	b := appendPackedInts(nil, tensorDims, dims)
	b = appendInt(b, tensorDataType, dataFloat)
	b = appendString(b, tensorName, name)
	b = protowire.AppendTag(b, tensorRawData, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(4*len(data)))
	for _, v := range data {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// int64Tensor is a TensorProto of type INT64 with its data in raw_data.
func int64Tensor(name string, dims []int64, data []int64) []byte {
	b := appendPackedInts(nil, tensorDims, dims)
	b = appendInt(b, tensorDataType, dataInt64)
	b = appendString(b, tensorName, name)
	raw := make([]byte, 0, 8*len(data))
	for _, v := range data {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
	}
	return appendMessage(b, tensorRawData, raw)
}

// floatValueInfo is the ValueInfoProto of a float tensor: dims holds the
// fixed sizes, and an entry of -1 is the symbolic batch dimension "N".
func floatValueInfo(name string, dims []int64) []byte {
	var shape []byte
	for _, d := range dims {
		var dim []byte
		if d < 0 {
			dim = appendString(nil, dimParam, "N")
		} else {
			dim = appendInt(nil, dimValue, d)
		}
		shape = appendMessage(shape, shapeDim, dim)
	}
	tt := appendInt(nil, tensorElemType, dataFloat)
	tt = appendMessage(tt, tensorShape, shape)
	typ := appendMessage(nil, typeTensorType, tt)
	return appendMessage(appendString(nil, valueName, name), valueType, typ)
}
