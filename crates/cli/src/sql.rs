//! `extentdb run` and `extentdb shell`: T-SQL on the embedded engine, as `sqlcmd -i` and
//! interactive sqlcmd run it, over a data directory (`--dir`, default `extentdb-data` in the
//! working directory), with no server to start.

use clap::Args;
use engine::instance::InstanceConfig;
use std::io::BufRead;
use std::path::PathBuf;
use tsql::server::Server;
use tsql::session::Session;

/// The data directory used when `--dir` is not given.
pub const DEFAULT_DIR: &str = "extentdb-data";

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scripts to run, in order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The data directory (created if missing).
    #[arg(long, default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
    /// Stop at the first batch that raises an error and exit with 1 (sqlcmd -b).
    #[arg(short = 'b')]
    pub stop_on_error: bool,
    /// The log rules of this SQL Server version: VLF sizes and IFI for log growth.
    #[arg(long, default_value = "2022")]
    pub vlf_rule: String,
    #[command(flatten)]
    pub startup: crate::startup::StartupArgs,
}

#[derive(Args, Debug)]
pub struct ShellArgs {
    /// The data directory (created if missing).
    #[arg(long, default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
    /// Run this query and exit (sqlcmd -Q).
    #[arg(short = 'Q')]
    pub query: Option<String>,
    /// Exit with 1 when a batch raises an error (sqlcmd -b).
    #[arg(short = 'b')]
    pub stop_on_error: bool,
    /// Connect to a TDS server (`host`, `host,port` or `host:port`) instead of the embedded
    /// engine (sqlcmd -S).
    #[arg(short = 'S')]
    pub server: Option<String>,
    /// Login name for -S (sqlcmd -U).
    #[arg(short = 'U', default_value = "sa")]
    pub user: String,
    /// Password for -S (sqlcmd -P); else EXTENTDB_SA_PASSWORD.
    #[arg(short = 'P')]
    pub password: Option<String>,
    /// The database to start in (sqlcmd -d).
    #[arg(short = 'd', default_value = "master")]
    pub database: String,
    /// The embedded engine's startup options (not used with -S).
    #[command(flatten)]
    pub startup: crate::startup::StartupArgs,
}

/// `host`, `host,port` or `host:port` as an address to connect to (port 1433 by default).
fn server_address(server: &str) -> String {
    let server = server.strip_prefix("tcp:").unwrap_or(server);
    match server.split_once([',', ':']) {
        Some((host, port)) => format!("{}:{}", host.trim(), port.trim()),
        None => format!("{}:1433", server.trim()),
    }
}

fn start(
    dir: &PathBuf,
    vlf_rule: &str,
    startup: &crate::startup::StartupArgs,
) -> Result<std::sync::Arc<Server>, String> {
    let mut config = InstanceConfig::new(dir);
    config.vlf_rule =
        engine::log::vlf::VlfRule::parse(vlf_rule).ok_or("--vlf-rule must be 2019 or 2022")?;
    startup.apply(&mut config);
    Server::start(config).map_err(|e| e.to_string())
}

/// Closes the databases; with `-b`, an error in a batch makes the exit code 1 (the error
/// itself was already printed, so the message is empty).
fn finish(server: &Server, ok: bool, stop_on_error: bool) -> Result<(), String> {
    server.shutdown().map_err(|e| e.to_string())?;
    if ok || !stop_on_error { Ok(()) } else { Err(String::new()) }
}

fn print(text: &str) {
    crate::write_stdout(text);
}

pub fn run(args: &RunArgs) -> Result<(), String> {
    let server = start(&args.dir, &args.vlf_rule, &args.startup)?;
    let mut session = Session::new(&server);
    let mut ok = true;
    for file in &args.files {
        let script = crate::script_file::read_script(file)?;
        ok &= tsql::sqlcmd::run_script(&mut session, &script, args.stop_on_error, &mut print);
        if !ok && args.stop_on_error {
            break;
        }
    }
    finish(&server, ok, args.stop_on_error)
}

/// The interactive shell: lines gather into a batch until `GO [n]`; `:r file` reads a script
/// into the batch; `exit` or `quit` (or end of input) leaves.
pub fn shell(args: &ShellArgs) -> Result<(), String> {
    if let Some(server) = &args.server {
        let password = args
            .password
            .clone()
            .or_else(|| std::env::var(tds::logins::SA_PASSWORD_VAR).ok())
            .unwrap_or_default();
        let mut client = tds::client::Client::connect(
            &server_address(server),
            &args.user,
            &password,
            &args.database,
        )?;
        let ok = match &args.query {
            Some(query) => {
                tsql::sqlcmd::run_script(&mut client, query, args.stop_on_error, &mut print)
            }
            None => repl(&mut client, args.stop_on_error)?,
        };
        return if ok || !args.stop_on_error { Ok(()) } else { Err(String::new()) };
    }
    let server = start(&args.dir, "2022", &args.startup)?;
    let mut session = Session::new(&server);
    if let Err(message) = use_start_database(&mut session, &server, &args.database) {
        drop(session);
        server.shutdown().map_err(|e| e.to_string())?;
        return Err(message);
    }
    let ok = match &args.query {
        Some(query) => {
            tsql::sqlcmd::run_script(&mut session, query, args.stop_on_error, &mut print)
        }
        None => repl(&mut session, args.stop_on_error)?,
    };
    drop(session);
    finish(&server, ok, args.stop_on_error)
}

/// sqlcmd's -d on the embedded engine: the session starts in that database, as a TDS login's
/// does (silently), or the shell ends with the login's error 4060 when there is none.
fn use_start_database(
    session: &mut Session,
    server: &Server,
    database: &str,
) -> Result<(), String> {
    if database.eq_ignore_ascii_case("master") {
        return Ok(());
    }
    if server.database(database).is_none() {
        let error = tsql::server::login_database_unavailable(database);
        return Err(format!(
            "Msg {}, Level {}, State {}\n{}",
            error.number, error.severity, error.state, error.message
        ));
    }
    let use_database = format!("USE [{}]", database.replace(']', "]]"));
    let mut failure = None;
    session.execute(&use_database, &mut |output| {
        if let tsql::server::Output::Error { error, .. } = output {
            failure = Some(format!(
                "Msg {}, Level {}, State {}\n{}",
                error.number, error.severity, error.state, error.message
            ));
        }
    });
    failure.map_or(Ok(()), Err)
}

/// The interactive loop over any batch runner (the embedded session or a TDS connection).
fn repl(session: &mut dyn tsql::sqlcmd::BatchRunner, stop_on_error: bool) -> Result<bool, String> {
    let mut ok = true;
    let mut pending = String::new();
    let mut editor = rustyline::DefaultEditor::new().map_err(|e| e.to_string())?;
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mut stdin = std::io::stdin().lock();
    let mut number = 1;
    // The lines of a script read by `:r`, taken before the next typed line, as if typed: a GO
    // in the script runs its batch there (it used to wait for one typed after).
    let mut included: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    loop {
        let prompt = format!("{number}> ");
        let line = if let Some(line) = included.pop_front() {
            line
        } else if interactive {
            match editor.readline(&prompt) {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    line
                }
                Err(_) => break,
            }
        } else {
            let mut line = String::new();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => line.trim_end_matches(['\n', '\r']).to_string(),
            }
        };
        let trimmed = line.trim();
        if pending.is_empty()
            && (trimmed.eq_ignore_ascii_case("exit") || trimmed.eq_ignore_ascii_case("quit"))
        {
            break;
        }
        if let Some(path) = trimmed.strip_prefix(":r ").or_else(|| trimmed.strip_prefix(":R ")) {
            let path = std::path::Path::new(path.trim().trim_matches('"'));
            match crate::script_file::read_script(path) {
                Ok(text) => {
                    // Ahead of what is left of an enclosing `:r`'s script, in their order.
                    for line in text.lines().rev() {
                        included.push_front(line.to_string());
                    }
                }
                Err(message) => eprintln!("{message}"),
            }
            continue;
        }
        pending.push_str(&line);
        pending.push('\n');
        number += 1;
        let first_word = trimmed.split_whitespace().next().unwrap_or_default();
        if first_word.eq_ignore_ascii_case("go") {
            ok &= tsql::sqlcmd::run_script(session, &pending, stop_on_error, &mut print);
            pending.clear();
            number = 1;
            if (!ok && stop_on_error) || session.is_shut_down() {
                break;
            }
        }
    }
    if !pending.trim().is_empty() {
        ok &= tsql::sqlcmd::run_script(session, &pending, stop_on_error, &mut print);
    }
    Ok(ok)
}
