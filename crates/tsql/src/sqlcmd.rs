//! Output as sqlcmd prints it: a result set as a header line, a line of dashes and one line per
//! row, columns padded to the widest value (deviation: sqlcmd pads to the column type's display
//! size, which extentdb does not carry yet); "(n rows affected)"; messages as they are; errors as
//! `Msg n, Level l, State s, Line k` and the text.

use crate::server::Output;
use crate::value::display;

/// One output item as sqlcmd prints it (with a trailing newline).
pub fn format(output: &Output) -> String {
    match output {
        Output::Rows(set) => {
            let mut widths: Vec<usize> = set.columns.iter().map(|c| c.chars().count()).collect();
            let texts: Vec<Vec<String>> =
                set.rows.iter().map(|r| r.iter().map(display).collect()).collect();
            for row in &texts {
                for (i, text) in row.iter().enumerate() {
                    widths[i] = widths[i].max(text.chars().count());
                }
            }
            // Padded by hand: a format width is at most 65,535, and a value can be longer.
            let pad = |cell: &String, width: usize| -> String {
                let fill = width.saturating_sub(cell.chars().count());
                format!("{cell}{}", " ".repeat(fill))
            };
            let line = |cells: Vec<String>| -> String {
                let padded: Vec<String> =
                    cells.iter().zip(&widths).map(|(c, w)| pad(c, *w)).collect();
                format!("{}\n", padded.join(" ").trim_end())
            };
            let mut out = line(set.columns.clone());
            out.push_str(&line(widths.iter().map(|w| "-".repeat(*w)).collect()));
            for row in texts {
                out.push_str(&line(row));
            }
            out.push('\n');
            out
        }
        Output::Message(text) => format!("{text}\n"),
        Output::RowCount(n) => {
            let noun = if *n == 1 { "row" } else { "rows" };
            format!("({n} {noun} affected)\n")
        }
        Output::Error { error, line, procedure } => {
            let procedure =
                procedure.as_ref().map(|p| format!("Procedure {p}, ")).unwrap_or_default();
            format!(
                "Msg {}, Level {}, State {}, {procedure}Line {}\n{}\n",
                error.number, error.severity, error.state, line, error.message
            )
        }
    }
}

/// Runs a script as `sqlcmd -i` does: batch by batch (`GO n` repeats one), printing as it goes.
/// With `stop_on_error` (sqlcmd `-b`) the script stops at the first batch that raised an error.
/// Returns whether every batch ran without error.
/// What runs a batch for sqlcmd: an embedded session, or a TDS client connected to a server.
pub trait BatchRunner {
    /// Runs one batch; every output goes to `out`. False if an error was raised.
    fn execute_batch(&mut self, text: &str, out: &mut dyn FnMut(Output)) -> bool;
    /// SHUTDOWN ran (or the connection ended): no more batches.
    fn is_shut_down(&self) -> bool;
}

impl BatchRunner for crate::session::Session {
    fn execute_batch(&mut self, text: &str, out: &mut dyn FnMut(Output)) -> bool {
        self.execute(text, out)
    }
    fn is_shut_down(&self) -> bool {
        crate::session::Session::is_shut_down(self)
    }
}

pub fn run_script(
    session: &mut dyn BatchRunner,
    script: &str,
    stop_on_error: bool,
    print: &mut dyn FnMut(&str),
) -> bool {
    run_script_with(session, script, stop_on_error, print, &mut |_| {})
}

/// [`run_script`], also handing every output (result sets, messages, errors) to `seen`
/// before it is printed: how the lab keeps a script's result sets for its charts.
pub fn run_script_with(
    session: &mut dyn BatchRunner,
    script: &str,
    stop_on_error: bool,
    print: &mut dyn FnMut(&str),
    seen: &mut dyn FnMut(&Output),
) -> bool {
    let batches = match crate::batch::split(script) {
        Ok(batches) => batches,
        Err(error) => {
            print(&format!(
                "Sqlcmd: Error: Syntax error at line {} near command '{}'.\n",
                error.line, error.message
            ));
            return false;
        }
    };
    let mut ok = true;
    for batch in batches {
        for _ in 0..batch.repeat {
            let batch_ok = session.execute_batch(&batch.text, &mut |output| {
                seen(&output);
                print(&format(&output))
            });
            ok &= batch_ok;
            if session.is_shut_down() {
                return ok;
            }
            if !batch_ok && stop_on_error {
                return false;
            }
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ResultSet;
    use engine::record::Value;

    /// A value wider than a format width can be (65,535) is padded too: this panicked with
    /// "Formatting argument out of range" before.
    #[test]
    fn a_value_wider_than_any_format_width_is_printed() {
        let wide = "x".repeat(70_000);
        let set = ResultSet {
            columns: vec!["wide".into(), "n".into()],
            rows: vec![
                vec![Value::Text(wide.clone()), Value::Int(1)],
                vec![Value::Text("y".into()), Value::Int(2)],
            ],
            types: Vec::new(),
        };
        let text = format(&Output::Rows(set));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("wide{} n", " ".repeat(70_000 - 4)));
        assert_eq!(lines[2], format!("{wide} 1"));
        assert_eq!(lines[3], format!("y{} 2", " ".repeat(70_000 - 1)));
    }
}
