// Command plugin-template is a Nexus plugin to copy: a policy that denies
// tools by name pattern and a sanitizer that redacts a pattern from results,
// each with a config schema, in one binary. See README.md.
package main
