//! What the XE engine offers: its packages, events with their fields, actions, targets and maps
//! (sys.dm_xe_packages, sys.dm_xe_objects, sys.dm_xe_object_columns, sys.dm_xe_map_values).
//!
//! The package GUIDs are SQL Server's (sqlserver's as Microsoft's docs print it in
//! sys.dm_xe_objects output; package0's and sqlos's as public scripts query them). Map keys are
//! this engine's own: a wait type's key is its place in [`crate::waits::WAIT_TYPES`] (name
//! order), where SQL Server's keys are build-specific numbers; a predicate that compares a map
//! field with a name (`[wait_type] = N'WRITELOG'`) means the same on both, one with a number
//! does not (docs/deviations.md).

use crate::waits::WAIT_TYPES;

/// One XE package.
#[derive(Debug, PartialEq, Eq)]
pub struct Package {
    pub name: &'static str,
    pub guid: &'static str,
    pub description: &'static str,
}

/// The module (the DLL in SQL Server) every package here belongs to.
pub const MODULE_GUID: &str = "CE79811F-1A80-40E1-8F5D-7445A3F375E7";

pub const PACKAGES: [Package; 3] = [
    Package {
        name: "package0",
        guid: "60AA9FBF-673B-4553-B7ED-71DCA7F5E972",
        description: "Default package. Contains all standard types, maps, compare operators, \
                      actions and targets",
    },
    Package {
        name: "sqlos",
        guid: "BD97CC63-3F38-4922-AA93-607BD12E78B2",
        description: "Extended events for SQL Operating System",
    },
    Package {
        name: "sqlserver",
        guid: "655FD93F-3364-40D5-B2BA-330F7FFB6491",
        description: "Extended events for Microsoft SQL Server",
    },
];

pub fn package(name: &str) -> Option<&'static Package> {
    PACKAGES.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The XE type of a field or action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Int32,
    Uint32,
    Uint64,
    Int64,
    Boolean,
    UnicodeString,
    /// An XML document, written inside the field's `<value>` as XML (not as escaped text).
    Xml,
    Ptr,
    /// A map field: its value is a key, shown with the map's text.
    Map(MapName),
}

impl FieldType {
    /// The type's name and package, as sys.dm_xe_object_columns' type_name shows it.
    pub fn type_name(self) -> (&'static str, &'static str) {
        match self {
            FieldType::Int32 => ("int32", "package0"),
            FieldType::Uint32 => ("uint32", "package0"),
            FieldType::Uint64 => ("uint64", "package0"),
            FieldType::Int64 => ("int64", "package0"),
            FieldType::Boolean => ("boolean", "package0"),
            FieldType::UnicodeString => ("unicode_string", "package0"),
            FieldType::Xml => ("xml", "package0"),
            FieldType::Ptr => ("ptr", "package0"),
            FieldType::Map(map) => (map.name(), map.package()),
        }
    }
}

/// The maps events here use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapName {
    WaitTypes,
    EventOpcode,
    DatabaseFileType,
    ErrorCategory,
    /// Flags, shown in hex as SQL Server shows them (`0x00000002`).
    ErrorDestination,
    /// sql_batch_completed's result (the map's name is this engine's; see docs/deviations.md).
    ExecutionResult,
}

impl MapName {
    pub fn name(self) -> &'static str {
        match self {
            MapName::WaitTypes => "wait_types",
            MapName::EventOpcode => "event_opcode",
            MapName::DatabaseFileType => "database_file_type",
            MapName::ErrorCategory => "error_category",
            MapName::ErrorDestination => "error_destination",
            MapName::ExecutionResult => "execution_result",
        }
    }

    pub fn package(self) -> &'static str {
        match self {
            MapName::WaitTypes | MapName::EventOpcode => "sqlos",
            _ => "sqlserver",
        }
    }

    /// Whether the map's keys are flags, written in hex in an event's XML.
    pub fn is_flags(self) -> bool {
        self == MapName::ErrorDestination
    }

    /// Every (key, text) of the map.
    pub fn values(self) -> Vec<(u32, &'static str)> {
        match self {
            MapName::WaitTypes => (0u32..).zip(WAIT_TYPES.iter().copied()).collect(),
            MapName::EventOpcode => vec![(0, "Begin"), (1, "End")],
            MapName::DatabaseFileType => vec![(0, "Data file"), (1, "Log file")],
            // The keys public event samples show (an error to a client is SERVER, USER).
            MapName::ErrorCategory => vec![(2, "SERVER"), (4, "LOGON")],
            MapName::ErrorDestination => vec![(0x02, "USER"), (0x10, "BUFFER")],
            MapName::ExecutionResult => vec![(0, "OK"), (1, "Error"), (2, "Abort")],
        }
    }

    pub fn text(self, key: u32) -> Option<&'static str> {
        self.values().into_iter().find(|(k, _)| *k == key).map(|(_, text)| text)
    }

    /// The key of a text, compared without regard to case.
    pub fn key(self, text: &str) -> Option<u32> {
        self.values().into_iter().find(|(_, t)| t.eq_ignore_ascii_case(text)).map(|(k, _)| k)
    }
}

pub const ALL_MAPS: [MapName; 6] = [
    MapName::WaitTypes,
    MapName::EventOpcode,
    MapName::DatabaseFileType,
    MapName::ErrorCategory,
    MapName::ErrorDestination,
    MapName::ExecutionResult,
];

/// One event's data field.
#[derive(Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub field_type: FieldType,
    pub description: &'static str,
}

/// One event the engine fires.
#[derive(Debug, PartialEq, Eq)]
pub struct EventObject {
    pub package: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub fields: &'static [Field],
}

/// Index of each event in [`EVENTS`] (the firing code names them by these).
pub const DATABASE_FILE_SIZE_CHANGE: usize = 0;
pub const WAIT_INFO: usize = 1;
pub const WAIT_INFO_EXTERNAL: usize = 2;
pub const ERROR_REPORTED: usize = 3;
pub const SQL_BATCH_STARTING: usize = 4;
pub const SQL_BATCH_COMPLETED: usize = 5;
pub const XML_DEADLOCK_REPORT: usize = 6;

const fn field(name: &'static str, field_type: FieldType, description: &'static str) -> Field {
    Field { name, field_type, description }
}

pub const EVENTS: [EventObject; 7] = [
    EventObject {
        package: "sqlserver",
        name: "database_file_size_change",
        description: "Occurs when any of the data or log files for a database changes size.",
        fields: &[
            field(
                "duration",
                FieldType::Uint64,
                "Time taken in microseconds to change the file size",
            ),
            field("database_id", FieldType::Uint32, "ID of the database"),
            field("file_id", FieldType::Uint32, "ID of the file"),
            field("file_type", FieldType::Map(MapName::DatabaseFileType), "Type of the file"),
            field("is_automatic", FieldType::Boolean, "Whether the change was an autogrowth"),
            field("total_size_kb", FieldType::Uint64, "Total size of the file in KB"),
            field("size_change_kb", FieldType::Int64, "Change in size in KB (negative on shrink)"),
            field("file_name", FieldType::UnicodeString, "Logical name of the file"),
            field("database_name", FieldType::UnicodeString, "Name of the database"),
        ],
    },
    EventObject {
        package: "sqlos",
        name: "wait_info",
        description: "Occurs when there is a wait on a SQLOS controlled resource.",
        fields: &[
            field(
                "wait_type",
                FieldType::Map(MapName::WaitTypes),
                "Value representing the type of wait",
            ),
            field("opcode", FieldType::Map(MapName::EventOpcode), "Begin or End"),
            field("duration", FieldType::Uint64, "Time in milliseconds the wait lasted"),
            field(
                "signal_duration",
                FieldType::Uint64,
                "Time in milliseconds from the signal to running",
            ),
            field("wait_resource", FieldType::Ptr, "Address of the resource waited on"),
        ],
    },
    EventObject {
        package: "sqlos",
        name: "wait_info_external",
        description: "Occurs when a SQLOS task switches to preemptive mode to execute \
                      potentially long running operations.",
        fields: &[
            field(
                "wait_type",
                FieldType::Map(MapName::WaitTypes),
                "Value representing the type of wait",
            ),
            field("opcode", FieldType::Map(MapName::EventOpcode), "Begin or End"),
            field("duration", FieldType::Uint64, "Time in milliseconds the wait lasted"),
            field("wait_resource", FieldType::Ptr, "Address of the resource waited on"),
        ],
    },
    EventObject {
        package: "sqlserver",
        name: "error_reported",
        description: "Occurs when an error is reported.",
        fields: &[
            field("error_number", FieldType::Int32, "The error number"),
            field("severity", FieldType::Int32, "The error severity"),
            field("state", FieldType::Int32, "The error state"),
            field(
                "user_defined",
                FieldType::Boolean,
                "Whether the error was raised by RAISERROR or THROW with a number of 50000 or more",
            ),
            field("category", FieldType::Map(MapName::ErrorCategory), "The error category"),
            field("destination", FieldType::Map(MapName::ErrorDestination), "Where the error went"),
            field("is_intercepted", FieldType::Boolean, "Whether a TRY...CATCH took the error"),
            field("message", FieldType::UnicodeString, "The error message"),
        ],
    },
    EventObject {
        package: "sqlserver",
        name: "sql_batch_starting",
        description: "Occurs when a Transact-SQL batch has started.",
        fields: &[field("batch_text", FieldType::UnicodeString, "The text of the batch")],
    },
    EventObject {
        package: "sqlserver",
        name: "sql_batch_completed",
        description: "Occurs when a Transact-SQL batch has finished executing.",
        fields: &[
            field("cpu_time", FieldType::Uint64, "CPU time in microseconds used by the batch"),
            field("duration", FieldType::Uint64, "Time in microseconds the batch took"),
            field("physical_reads", FieldType::Uint64, "Pages the batch read from disk"),
            field("logical_reads", FieldType::Uint64, "Pages the batch read from the buffer pool"),
            field("writes", FieldType::Uint64, "Pages the batch wrote"),
            field(
                "row_count",
                FieldType::Uint64,
                "Rows the batch's statements affected or returned",
            ),
            field("result", FieldType::Map(MapName::ExecutionResult), "OK, Error or Abort"),
            field("batch_text", FieldType::UnicodeString, "The text of the batch"),
        ],
    },
    EventObject {
        package: "sqlserver",
        name: "xml_deadlock_report",
        description: "Produces a deadlock report in XML format.",
        fields: &[field("xml_report", FieldType::Xml, "The deadlock graph")],
    },
];

/// An event by package and name (the package may be omitted, as CREATE EVENT SESSION allows
/// when the name is unique).
pub fn event_index(package: Option<&str>, name: &str) -> Option<usize> {
    EVENTS.iter().position(|event| {
        event.name.eq_ignore_ascii_case(name)
            && package.is_none_or(|p| event.package.eq_ignore_ascii_case(p))
    })
}

/// One action (a global field a session can add to an event, or test in a predicate).
#[derive(Debug, PartialEq, Eq)]
pub struct ActionObject {
    pub package: &'static str,
    pub name: &'static str,
    pub field_type: FieldType,
    pub description: &'static str,
}

pub const ACTIONS: [ActionObject; 8] = [
    ActionObject {
        package: "package0",
        name: "collect_system_time",
        field_type: FieldType::UnicodeString,
        description: "Collect the current system time",
    },
    ActionObject {
        package: "sqlserver",
        name: "client_app_name",
        field_type: FieldType::UnicodeString,
        description: "Collect client application name",
    },
    ActionObject {
        package: "sqlserver",
        name: "client_hostname",
        field_type: FieldType::UnicodeString,
        description: "Collect client hostname",
    },
    ActionObject {
        package: "sqlserver",
        name: "database_id",
        field_type: FieldType::Uint32,
        description: "Collect database ID",
    },
    ActionObject {
        package: "sqlserver",
        name: "database_name",
        field_type: FieldType::UnicodeString,
        description: "Collect current database name",
    },
    ActionObject {
        package: "sqlserver",
        name: "session_id",
        field_type: FieldType::Uint32,
        description: "Collect session ID",
    },
    ActionObject {
        package: "sqlserver",
        name: "sql_text",
        field_type: FieldType::UnicodeString,
        description: "Collect SQL text",
    },
    ActionObject {
        package: "sqlserver",
        name: "username",
        field_type: FieldType::UnicodeString,
        description: "Collect username",
    },
];

pub fn action(package: Option<&str>, name: &str) -> Option<&'static ActionObject> {
    ACTIONS.iter().find(|a| {
        a.name.eq_ignore_ascii_case(name)
            && package.is_none_or(|p| a.package.eq_ignore_ascii_case(p))
    })
}

/// One target type, with its customizable attributes (name, type, default).
#[derive(Debug, PartialEq, Eq)]
pub struct TargetObject {
    pub name: &'static str,
    pub description: &'static str,
    pub attributes: &'static [(&'static str, &'static str, &'static str)],
}

pub const TARGETS: [TargetObject; 3] = [
    TargetObject {
        name: "event_counter",
        description: "Use the event_counter target to count the number of occurrences of \
                      each event in the event session.",
        attributes: &[],
    },
    TargetObject {
        name: "event_file",
        description: "Use the event_file target to save the event data to an XEL file, which \
                      can be archived and used for later analysis and review.",
        attributes: &[
            ("filename", "unicode_string_ptr", ""),
            ("max_file_size", "uint64", "1024"),
            ("max_rollover_files", "uint32", "5"),
            ("increment", "uint64", "0"),
            ("metadatafile", "unicode_string_ptr", ""),
        ],
    },
    TargetObject {
        name: "ring_buffer",
        description: "Asynchronous ring buffer target.",
        attributes: &[
            ("max_memory", "uint32", "4096"),
            ("max_events_limit", "uint32", "1000"),
            ("occurrence_number", "uint32", "0"),
        ],
    },
];

/// A target by name; `asynchronous_file_target` is event_file's SQL Server 2008 name.
pub fn target(name: &str) -> Option<&'static TargetObject> {
    let name =
        if name.eq_ignore_ascii_case("asynchronous_file_target") { "event_file" } else { name };
    TARGETS.iter().find(|t| t.name.eq_ignore_ascii_case(name))
}
