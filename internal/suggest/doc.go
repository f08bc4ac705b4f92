// Package suggest finds the names a person probably meant: the nearest by
// edit distance, close enough to be worth saying ("did you mean"). The
// host suggests tools and servers with it, the command line commands and
// flags, so a typo gets the same answer wherever it is made.
package suggest
