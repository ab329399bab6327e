//! The context every check works in: the text (for positions), its name, and the
//! warnings so far.

use std::cell::RefCell;
use std::fmt::Display;
use std::ops::Range;

use toml::Spanned;

use crate::{ConfigError, ConfigWarning};

/// Where errors point: the text (for positions) and its name; and the errors
/// and warnings so far. A check that can go on past a bad value records its
/// error ([`Cx::keep`]) so that one run reports every error of a file.
pub(crate) struct Cx<'a> {
    text: &'a str,
    origin: &'a str,
    errors: RefCell<Vec<ConfigError>>,
    warnings: RefCell<Vec<ConfigWarning>>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(text: &'a str, origin: &'a str) -> Self {
        Cx {
            text,
            origin,
            errors: RefCell::new(Vec::new()),
            warnings: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn into_warnings(self) -> Vec<ConfigWarning> {
        self.warnings.into_inner()
    }

    /// The errors recorded, in the order the checks ran, and the warnings.
    pub(crate) fn into_parts(self) -> (Vec<ConfigError>, Vec<ConfigWarning>) {
        (self.errors.into_inner(), self.warnings.into_inner())
    }

    /// Record `e`; checking goes on.
    pub(crate) fn record(&self, e: ConfigError) {
        self.errors.borrow_mut().push(e);
    }

    /// The value of `r`, or `None` with its error recorded.
    pub(crate) fn keep<T>(&self, r: Result<T, ConfigError>) -> Option<T> {
        r.map_err(|e| self.record(e)).ok()
    }

    /// Run the check of one key: a bad value is recorded, and the checks of the
    /// other keys still run.
    pub(crate) fn check(&self, one_key: impl FnOnce() -> Result<(), ConfigError>) {
        self.keep(one_key());
    }

    /// Whether an error has been recorded.
    pub(crate) fn failed(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    pub(crate) fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.origin, self.text, span, msg)
    }

    /// Record a warning at `span`; loading goes on.
    pub(crate) fn warn(&self, span: Range<usize>, msg: String) {
        let w = ConfigWarning::at(self.origin, self.text, span, msg);
        self.warnings.borrow_mut().push(w);
    }

    /// `KEY = VALUE: problem; expected EXPECTED`, at the value.
    pub(crate) fn bad<T: std::fmt::Debug>(
        &self,
        key: &str,
        v: &Spanned<T>,
        problem: impl Display,
        expected: impl Display,
    ) -> ConfigError {
        self.err(
            v.span(),
            format!("{key} = {:?}: {problem}; expected {expected}", v.get_ref()),
        )
    }
}
