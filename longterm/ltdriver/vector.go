package ltdriver

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EncodeVector returns v as stored: each element as 4 bytes, IEEE 754
// little-endian. nil for an empty vector.
func EncodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reads what EncodeVector wrote.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector of %d bytes is not a whole number of float32", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// CosineEncoded returns the cosine similarity of q and a vector as
// EncodeVector stores it, without decoding it into a slice: 0 when their
// lengths differ or either is zero.
func CosineEncoded(q []float32, b []byte) float64 {
	if len(b) != 4*len(q) || len(q) == 0 {
		return 0
	}
	var dot, nq, nb float64
	for i, x := range q {
		y := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		dot += float64(x) * y
		nq += float64(x) * float64(x)
		nb += y * y
	}
	if nq == 0 || nb == 0 {
		return 0
	}
	return max(-1, min(1, dot/(math.Sqrt(nq)*math.Sqrt(nb))))
}
