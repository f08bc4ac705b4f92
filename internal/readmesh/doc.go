// Package readmesh runs the shell blocks of a template's README.md, as a
// reader would type them, in a temporary folder outside the repository:
// its tests check that the templates' READMEs' commands work
// (examples/filter-template and examples/plugin-template: they live here,
// not in the templates, so that a copy is the template and nothing else).
package readmesh
