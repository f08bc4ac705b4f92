package filterabi

import (
	"encoding/json"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// FieldOf is what the host function "field" answers for e: the field's
// text and its length, or Absent (the event has no such field) or
// UnknownID. session is the host's session id. The host and this SDK's
// native harness both use it, so the two cannot disagree.
func FieldOf(e *event.Event, id Field, session string) (string, int32) {
	var s string
	switch id {
	case FieldPhase:
		s = e.Phase
	case FieldMethod:
		s = e.Method
	case FieldAgentID:
		s = e.Agent.ID
	case FieldPermission:
		s = e.Agent.Permission
	case FieldServer:
		s = e.Server.Name
	case FieldTool:
		if e.Tool == nil {
			return "", Absent
		}
		s = e.Tool.Name
	case FieldAnnotations:
		if e.Tool == nil || e.Tool.Annotations == nil {
			return "", Absent
		}
		b, err := json.Marshal(e.Tool.Annotations)
		if err != nil {
			return "", Absent
		}
		s = string(b)
	case FieldSession:
		s = session
	case FieldParams:
		if len(e.Params) == 0 {
			return "", Absent
		}
		s = string(e.Params)
	case FieldResult:
		if len(e.Result) == 0 {
			return "", Absent
		}
		s = string(e.Result)
	case FieldDefinition:
		if e.Tool == nil || len(e.Tool.Definition) == 0 {
			return "", Absent
		}
		s = string(e.Tool.Definition)
	case FieldListing:
		if e.Listing == nil {
			return "", Absent
		}
		s = e.Listing.Text()
	case FieldListingID:
		if e.Listing == nil {
			return "", Absent
		}
		s = e.Listing.ID
	default:
		return "", UnknownID
	}
	return s, int32(len(s))
}

// ContentTexts lists the content items of a tools/call result: the text
// of each text item, nil for the others (images, audio, resources). The
// host function "content_text" answers from it.
func ContentTexts(result json.RawMessage) []*string {
	if len(result) == 0 {
		return nil
	}
	var r struct {
		Content []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	out := make([]*string, len(r.Content))
	for i, c := range r.Content {
		if c.Type == "text" && c.Text != nil {
			out[i] = c.Text
		}
	}
	return out
}

// ContentTextOf is what "content_text" answers for item i of texts (from
// ContentTexts): the text, or Absent or NotText.
func ContentTextOf(texts []*string, i int) (string, int32) {
	if i < 0 || i >= len(texts) {
		return "", Absent
	}
	if texts[i] == nil {
		return "", NotText
	}
	return *texts[i], int32(len(*texts[i]))
}
