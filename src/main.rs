//! The `filewatchd` binary: parse arguments, set up logging, run, map the result to an exit
//! code (0 done, 1 error, 2 usage, 3 refused because of conflicts).

use std::process::ExitCode;

use clap::Parser;
use filewatchd::cli::{self, Cli};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = match cli.verbose {
        0 => "filewatchd=info",
        1 => "filewatchd=debug",
        _ => "filewatchd=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("filewatchd: {err:#}");
            ExitCode::FAILURE
        }
    }
}
