package filterabi

// The ABI, version 1 (sdk/filter/ABI.md is the full text). These names and numbers
// are the contract between the host and every guest, in any language; the
// host checks a module against them when it loads it.
const (
	// ABIMajor is the major version; it is in the name of the marker export,
	// so a module built for another major version is refused at load.
	ABIMajor = 1
	// ABIMinor is the minor version this SDK implements. Minor versions
	// only add host functions or optional exports.
	ABIMinor = 1

	// MaxOutput bounds a decision: the host refuses a larger one.
	MaxOutput = 10 << 20
)

// Guest exports.
const (
	ExportMemory    = "memory"
	ExportMarker    = "nexus_filter_abi_v1"
	ExportMinor     = "nx_abi_minor"
	ExportInputBuf  = "nx_input_buf"
	ExportConfigure = "nx_configure"
	ExportOnEvent   = "nx_on_event"
)

// HostModule is the import module of the host functions.
const HostModule = "nexus"

// Host functions (module "nexus").
const (
	ImportLog         = "log"          // (level, ptr, len i32)
	ImportField       = "field"        // (id, ptr, cap i32) -> i32
	ImportContentText = "content_text" // (index, ptr, cap i32) -> i32
)

// Field identifies a single event field that the host function "field"
// returns without the guest parsing the event.
type Field int32

// Fields, by id. Annotations, Params and Result are JSON; Session is an
// unguessable id of the host session, the same for every call in one
// session and never sent to a server.
const (
	FieldPhase       Field = 0
	FieldMethod      Field = 1
	FieldAgentID     Field = 2
	FieldPermission  Field = 3
	FieldServer      Field = 4
	FieldTool        Field = 5
	FieldAnnotations Field = 6
	FieldSession     Field = 7
	FieldParams      Field = 8 // the params, as JSON
	FieldResult      Field = 9 // the result, as JSON

	// Since 1.1, for tools/list events:
	FieldDefinition Field = 10 // the tool's definition as the server listed it, as JSON
	FieldListing    Field = 11 // every tool of the listing: "server\ttool\n" lines
	FieldListingID  Field = 12 // changes whenever the listing does
)

// Results of the field and content_text host functions other than a
// length.
const (
	Absent     = -1 // the event has no such field, or no content item at that index
	UnknownID  = -2 // field: an id this host does not know (a newer minor's)
	NotText    = -2 // content_text: the item at that index is not text
	OutOfRange = -3 // the buffer is not inside the guest's memory
)

// Level is a log level of the host function "log".
type Level int32

// Log levels.
const (
	LevelTrace Level = 0
	LevelDebug Level = 1
	LevelInfo  Level = 2
	LevelWarn  Level = 3
	LevelError Level = 4
)

func (l Level) String() string {
	switch l {
	case LevelTrace:
		return "trace"
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "info"
}
