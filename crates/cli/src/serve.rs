//! `extentdb serve`: the TDS server (crates/tds) on a data directory, for SQL Server clients.
//! SIGTERM (or Ctrl-C) and the SHUTDOWN statement end it cleanly: connections finish, the
//! databases are checkpointed and closed, and the errorlog says so.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The data directory (created, with the sa login, on first start).
    #[arg(long, default_value = crate::sql::DEFAULT_DIR)]
    pub dir: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,
    /// The TCP port.
    #[arg(long, default_value_t = 1433)]
    pub port: u16,
    /// The most connections at once.
    #[arg(long, default_value_t = 256)]
    pub max_connections: usize,
    /// No TLS: PRELOGIN answers NOT_SUP (clients that demand encryption are refused).
    #[arg(long)]
    pub no_tls: bool,
    /// The TLS certificate (PEM); with --key. Default: a self-signed one made at first start
    /// in the data directory (tds_cert.pem, tds_key.pem).
    #[arg(long, requires = "key")]
    pub cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, requires = "cert")]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub startup: crate::startup::StartupArgs,
}

pub fn run(args: &ServeArgs) -> Result<(), String> {
    let mut config = tds::server::ServeConfig::new(&args.dir);
    config.address = args.address.clone();
    config.port = args.port;
    config.max_connections = args.max_connections;
    config.sa_password = std::env::var(tds::logins::SA_PASSWORD_VAR).ok();
    args.startup.apply(&mut config.instance);
    config.tls = match (&args.cert, &args.key, args.no_tls) {
        (_, _, true) => tds::server::TlsSetting::Off,
        (Some(cert), Some(key), false) => {
            tds::server::TlsSetting::Files { cert: cert.clone(), key: key.clone() }
        }
        _ => tds::server::TlsSetting::SelfSigned,
    };
    let listener = tds::server::Listener::bind(config)?;
    // SIGTERM and SIGINT stop the listener, which then checkpoints and closes the databases.
    let stop = listener.stop_flag();
    ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::Relaxed))
        .map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    eprintln!(
        "extentdb: listening on {} (data directory {})",
        listener.local_addr(),
        args.dir.display()
    );
    listener.run()
}
