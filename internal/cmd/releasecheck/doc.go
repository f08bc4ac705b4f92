// Command releasecheck checks one platform's release snapshot, as make
// test's release step builds it (goreleaser, .goreleaser.yaml, into
// bin/dist): the archive holds nexus, the three plugins, the WASM filters
// and the license and security files; its checksum matches checksums.txt;
// the nexus in it says the stamped version and runs `make run`'s call
// against the built-in test server; and its CycloneDX SBOM lists wazero,
// go-plugin and hcl at the versions linked into that binary. It prints
// what it checked and exits 1 naming the first thing that is wrong.
package main
