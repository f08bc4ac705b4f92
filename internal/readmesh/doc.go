// Package readmesh runs the shell blocks of a template's README.md, as a
// reader would type them, in a temporary folder outside the repository:
// the templates' tests check that their READMEs' commands work.
package readmesh
