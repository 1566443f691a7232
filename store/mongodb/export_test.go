package mongodb

// Unavailable returns err as a store method returns it: wrapping
// cairn.ErrUnavailable when it is an outage.
func Unavailable(err error) error {
	unavailable(&err)
	return err
}

// WrittenBefore is the filter of an erasure's removals (writtenBefore).
var WrittenBefore = writtenBefore
