package auth

// Explain turns an error of this package into the report a person reads
// (internal/explain.Error, set by explain_test.go): the words are built
// there, and this package's tests check them on its real errors.
var Explain = func(err error) error { return err }
