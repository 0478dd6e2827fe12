use mimalloc::MiMalloc;

use vegdb::cli::{self, Command, ConfigAction, SnapshotAction, UserAction};

// What a crate demands: the global allocator is a static.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn main() -> anyhow::Result<()> {
    // flags > environment > configuration file (--config / VEGDB_CONFIG) > defaults;
    // `vegdb` without a subcommand is `vegdb serve`
    let parsed = vegdb::config_file::parse()?;
    vegdb::server::init_tracing(&parsed.cli.log, parsed.cli.log_json);
    if let Some(Command::Config {
        action: ConfigAction::Print(_),
    }) = &parsed.cli.command
    {
        print!("{}", vegdb::config_file::effective_toml(&parsed));
        return Ok(());
    }
    match parsed.cli.command {
        // parse() puts `serve` in when no subcommand is given
        None => anyhow::bail!("no subcommand"),
        Some(Command::Serve(mut args)) => {
            args.log_json = parsed.cli.log_json;
            vegdb::server::run(args)
        }
        Some(Command::Config { .. }) => Ok(()),
        Some(Command::Probe {
            url,
            listen,
            timeout,
        }) => cli::run_probe(url, listen, timeout),
        Some(Command::Generate { scale, seed, data }) => cli::run_generate(scale, seed, &data),
        Some(Command::Import {
            source,
            download_dir,
            data,
            types,
            concurrency,
            history,
        }) => cli::run_import(&source, download_dir, &data, &types, concurrency, history),
        Some(Command::Refresh { source, data }) => cli::run_refresh(&source, &data),
        Some(Command::Export {
            type_id,
            segmentert,
            egenskaper,
            format,
            srid,
            kommune,
            out,
            data,
        }) => match type_id {
            Some(type_id) => cli::run_export(type_id, format, srid.as_deref(), kommune, out, &data),
            None => cli::run_export_segmented(
                &segmentert,
                egenskaper.as_deref(),
                format,
                srid.as_deref(),
                &kommune,
                out,
                &data,
            ),
        },
        Some(Command::Snapshot { action }) => match action {
            SnapshotAction::Inspect { data, generation } => cli::run_inspect(&data, generation),
            SnapshotAction::Verify { data, generation } => cli::run_verify(&data, generation),
            SnapshotAction::Load { data, generation } => cli::run_load(&data, generation),
            SnapshotAction::Rollback { data, to } => cli::run_rollback(&data, to),
            SnapshotAction::Upgrade {
                data,
                generation,
                out,
            } => cli::run_upgrade(&data, generation, out.as_deref()),
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
