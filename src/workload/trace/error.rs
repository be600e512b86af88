//! The trace floor's error: what was wrong in a log option, a line or a
//! value, without the file and line (the reader adds them).

/// An error reading a trace or an access log. It renders as the one-line
/// text users see after `FILE: line N: `; the variant says what part of
/// the input was wrong and so which exit code it gets
/// ([`From<ParseError> for Error`](crate::error::Error)).
///
/// # Examples
/// ```
/// use ratelab::workload::trace::ParseError;
/// use ratelab::workload::trace::log::time::parse_clf;
///
/// let e = parse_clf("10/Foo/2000:13:55:36 -0700").unwrap_err();
/// assert!(matches!(e, ParseError::Value(_)));
/// assert_eq!(e.to_string(), r#""10/Foo/2000:13:55:36 -0700": unknown month "Foo""#);
/// assert_eq!(ratelab::error::Error::from(e).exit_code(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// An option does not fit the log: an unknown format, time unit or
    /// spread, a bad `log_format` string, key expression or `xff` rule, a
    /// field the format does not have.
    #[error("{0}")]
    Option(String),
    /// A line does not split into the format's fields.
    #[error("{0}")]
    Line(String),
    /// One field of a line does not read: its name and why.
    #[error("field {field}: {problem}")]
    Field {
        /// The field's name (or number).
        field: String,
        /// What was wrong with its value.
        problem: Box<ParseError>,
    },
    /// A value (a time, a number, a weight, an address) is not what was
    /// expected; the text names the value.
    #[error("{0}")]
    Value(String),
    /// An error inside a named part of the options (`key "ip"`, `log
    /// format`): the part, then the error.
    #[error("{context}: {source}")]
    In {
        /// Where: `key "ip"`, `format`, `header "x-user"`.
        context: String,
        /// The error there.
        source: Box<ParseError>,
    },
    /// A bug in ratelab (a parser used before its fields were bound).
    #[error("internal: {0}")]
    Internal(&'static str),
}

impl ParseError {
    /// This error inside field `field`.
    pub fn in_field(self, field: impl Into<String>) -> Self {
        ParseError::Field {
            field: field.into(),
            problem: Box::new(self),
        }
    }

    /// This error inside `context` (`key "ip"`, `format`).
    pub fn within(self, context: impl Into<String>) -> Self {
        ParseError::In {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// Whether this is a bug rather than bad input.
    pub fn is_internal(&self) -> bool {
        match self {
            ParseError::Internal(_) => true,
            ParseError::Field { problem: e, .. } | ParseError::In { source: e, .. } => {
                e.is_internal()
            }
            _ => false,
        }
    }
}

impl From<ParseError> for crate::error::Error {
    /// Bad input (exit 2), except a bug (exit 3).
    fn from(e: ParseError) -> Self {
        match e.is_internal() {
            true => crate::error::Error::internal(e.to_string()),
            false => crate::error::Error::input(e.to_string()),
        }
    }
}
