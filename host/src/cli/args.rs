//! A small command-line parser: positional arguments, `--flag`, `--key value` and
//! `--key=value`. Hand-written because the CLI is a handful of subcommands and a
//! parser crate would be the biggest dependency of the command line.

use std::collections::BTreeMap;

/// Parsed arguments of one subcommand.
#[derive(Debug, Default, Clone)]
pub(super) struct Args {
    pub positional: Vec<String>,
    /// Every value of each flag, in order (flags like `--set` repeat).
    values: BTreeMap<String, Vec<String>>,
    switches: Vec<String>,
}

/// A usage error, printed with the subcommand's help hint.
#[derive(Debug, PartialEq)]
pub(super) struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Args {
    /// Parses `argv`; `with_value` lists the flags that take a value, `switches` the
    /// ones that don't. Anything else starting with `--` is an error naming it.
    pub(super) fn parse(argv: &[String], with_value: &[&str], switches: &[&str]) -> Result<Args, UsageError> {
        let mut args = Args::default();
        let mut i = 0;
        while i < argv.len() {
            let arg = &argv[i];
            if arg == "--" {
                args.positional.extend(argv[i + 1..].iter().cloned());
                break;
            }
            if let Some(flag) = arg.strip_prefix("--") {
                let (name, inline) = match flag.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (flag, None),
                };
                if with_value.contains(&name) {
                    let value = match inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            argv.get(i)
                                .cloned()
                                .ok_or_else(|| UsageError(format!("--{name} needs a value")))?
                        }
                    };
                    args.values.entry(name.to_string()).or_default().push(value);
                } else if switches.contains(&name) {
                    if inline.is_some() {
                        return Err(UsageError(format!("--{name} takes no value")));
                    }
                    args.switches.push(name.to_string());
                } else {
                    return Err(UsageError(format!("unknown flag --{name}")));
                }
            } else if arg == "-h" {
                args.switches.push("help".into());
            } else {
                args.positional.push(arg.clone());
            }
            i += 1;
        }
        Ok(args)
    }

    /// The flag's value (the last one when repeated).
    pub(super) fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name)?.last().map(String::as_str)
    }

    /// Every value of a repeatable flag, in order.
    pub(super) fn values(&self, name: &str) -> &[String] {
        self.values.get(name).map_or(&[], Vec::as_slice)
    }

    pub(super) fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// Fails when more than `max` positional arguments were given.
    pub(super) fn at_most(&self, max: usize) -> Result<(), UsageError> {
        match self.positional.get(max) {
            Some(extra) => Err(UsageError(format!("unexpected argument {extra:?}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_values_switches_and_positionals() {
        let a = Args::parse(
            &argv("x --plugins dir --listen=1.2.3.4:5 --locked y"),
            &["plugins", "listen"],
            &["locked"],
        )
        .unwrap();
        assert_eq!(a.positional, vec!["x", "y"]);
        assert_eq!(a.value("plugins"), Some("dir"));
        assert_eq!(a.value("listen"), Some("1.2.3.4:5"));
        assert!(a.switch("locked"));
        assert!(a.at_most(1).is_err());
    }

    #[test]
    fn unknown_and_incomplete_flags_are_errors() {
        assert_eq!(
            Args::parse(&argv("--nope"), &[], &[]).unwrap_err().0,
            "unknown flag --nope"
        );
        assert_eq!(
            Args::parse(&argv("--plugins"), &["plugins"], &[]).unwrap_err().0,
            "--plugins needs a value"
        );
        assert!(Args::parse(&argv("--locked=1"), &[], &["locked"]).is_err());
    }
}
