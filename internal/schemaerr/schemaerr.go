package schemaerr

import (
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var english = message.NewPrinter(language.English)

// Lines lists ve's innermost causes: they name the field and the rule
// ("/per_agent/rate: 'lots' does not match pattern ..."), where the outer
// ones say only that a $ref or a property failed.
func Lines(ve *jsonschema.ValidationError) []string {
	var out []string
	leaves(ve, &out)
	slices.Sort(out)
	return slices.Compact(out)
}

func leaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) == 0 {
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		*out = append(*out, loc+": "+ve.ErrorKind.LocalizedString(english))
		return
	}
	for _, c := range ve.Causes {
		leaves(c, out)
	}
}
