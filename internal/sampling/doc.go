// Package sampling answers servers' sampling requests (sampling/createMessage)
// with a model: an OpenAI-compatible chat-completions endpoint named by the
// config's sampling block, which covers local servers (Ollama, vLLM,
// llama.cpp) as well as hosted ones.
//
// Only the servers the block lists may sample. Each request is bounded: its
// maxTokens is capped, each server may make so many requests a minute, the
// endpoint must answer within the block's timeout and the caller's context,
// and its answer is read up to 1 MiB. A refusal or a failure is an error
// that says which limit or what the endpoint answered. Whether a person
// confirms each request first is the caller's business (the CLI asks at the
// terminal unless the block says confirm = false); the host puts request
// and reply through the filter chain as for any server-initiated request.
//
// The sampling block (Block) is this package's: its options are
// ConfigBlock's table, through which the config loader decodes the block
// from nexus.hcl and JSON and writes it back.
package sampling
