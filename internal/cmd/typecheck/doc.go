// Command typecheck type-checks the module's packages and everything they
// import, from source, for another GOOS and GOARCH: make test's check that
// the Windows and macOS code still builds, in a fraction of a cross
// compile's time (no code is generated). Errors are printed as the
// compiler's front end reports them; the exit status is 1 when there are
// any.
package main
