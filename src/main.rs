use clap::Parser;
use mimalloc::MiMalloc;

use vegdb::cli::{self, Cli, Command, SnapshotAction, UserAction};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    vegdb::server::init_tracing(&cli.log, cli.log_json);
    match cli.command {
        None => vegdb::server::run(vegdb::config::ServeOnly::parse_from(["vegdb"]).args),
        Some(Command::Serve(args)) => vegdb::server::run(args),
        Some(Command::Generate { scale, seed, data }) => cli::run_generate(scale, seed, &data),
        Some(Command::Import {
            source,
            download_dir,
            data,
            types,
            concurrency,
        }) => cli::run_import(&source, download_dir, &data, &types, concurrency),
        Some(Command::Refresh { source, data }) => cli::run_refresh(&source, &data),
        Some(Command::Snapshot { action }) => match action {
            SnapshotAction::Inspect { data, generation } => cli::run_inspect(&data, generation),
            SnapshotAction::Verify { data, generation } => cli::run_verify(&data, generation),
            SnapshotAction::Load { data, generation } => cli::run_load(&data, generation),
            SnapshotAction::Push {
                data,
                to,
                generation,
            } => cli::run_push(&data, &to, generation),
            SnapshotAction::Pull {
                from,
                data,
                generation,
            } => cli::run_pull(&from, &data, generation),
            SnapshotAction::Queries {
                data,
                kind,
                count,
                seed,
            } => cli::run_queries(&data, kind, count, seed),
        },
        Some(Command::User { action }) => match action {
            UserAction::Add {
                name,
                roles,
                types,
                kommuner,
                data,
                users,
                password_stdin,
            } => cli::run_user_add(&name, &roles, types, kommuner, &data, users, password_stdin),
        },
    }
}
