package httpserver

// For the external tests (replicas_test.go).
const (
	FinishedKeep = finishedKeep
	InitBody     = initBody
)
