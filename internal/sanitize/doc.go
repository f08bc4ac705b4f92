// Package sanitize makes text from MCP servers safe to show on a terminal.
//
// Everything a server sends — tool results, resource text, prompt messages,
// error messages, the stderr of a crashed process — is written by a program
// Nexus does not control, and a terminal executes what it prints. Escape
// sequences can retitle the window, move the cursor to overwrite a
// confirmation prompt, hide text, plant a clickable link whose target differs
// from what is shown, or (on some terminals) write to the clipboard; bidi
// controls can make the text a person reviews read differently from the
// bytes a program acts on ("Trojan Source"). ForDisplay removes all of these,
// repairs invalid UTF-8, and caps the size, so that what a person sees is the
// plain text the server sent and nothing more.
//
// It is the first, built-in sanitizer of every response chain and the last
// step before anything is printed; because sanitized text is returned
// unchanged (without allocating), running it at more than one layer is free.
// Clean is the same pass that also says whether it changed the text, for
// callers that record a sanitizer's work.
package sanitize
