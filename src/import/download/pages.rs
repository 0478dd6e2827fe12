//! `vegdb import --source URL --history`: the paged `/vegobjekter/{typeId}` list, which holds
//! every version of every object (the `/stream` only the active ones), saved page by page as
//! `page-<n>.json` (the page as the upstream sent it: `vegobjekter` + `metadata`), the shape a
//! directory of saved pages has, so the import reads it like any other directory.
//!
//! The list is paged by `start=<id>-<versjon>`: each page's `metadata.neste.start` is the token
//! of the next call; an empty page (or one without `neste`) ends it. After every page the
//! token and page count are saved (`pages.state`, atomically), so a killed run resumes at the
//! next page. A page is read whole (at most [`MAX_OBJECT_PAGE_BYTES`]) with the retries of
//! the stream download; a page that is not a page of objects, holds more than asked for, a
//! record without `id`/`versjon`, or hands back the token it was called with fails at once.

use serde::{Deserialize, Serialize};

use super::*;

/// Objects per call of the paged list (`antall`: 1–1,000 in the OpenAPI).
pub const MAX_PAGE_OBJECTS: usize = 1000;
/// The most bytes of one page of the paged object list (read whole).
pub const MAX_OBJECT_PAGE_BYTES: u64 = 256 << 20;
/// The paged download's progress in its type directory.
const PAGES_STATE: &str = "pages.state";

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
struct PagesState {
    /// The `start` token of the next call (None: the first page).
    next: Option<String>,
    /// Pages saved so far (the next one is `page-<pages>.json`).
    pages: u64,
    done: bool,
}

fn read_pages_state(dir: &Path) -> Result<PagesState> {
    let p = dir.join(PAGES_STATE);
    match std::fs::read(&p) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt(&p, e.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PagesState::default()),
        Err(e) => Err(EngineError::io(&p, e)),
    }
}

fn failed(call: &str, why: impl std::fmt::Display) -> EngineError {
    EngineError::Internal(format!("download failed: {call}: {why}"))
}

/// The number of objects on `page` and its `neste.start` token, after checking that it is a
/// page of at most `antall` objects, each with an id and a version.
fn check_page(
    call: &str,
    page: &serde_json::Value,
    antall: usize,
) -> Result<(usize, Option<String>)> {
    let list = page
        .get("vegobjekter")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| failed(call, "not a page of vegobjekter (no `vegobjekter` list)"))?;
    if list.len() > antall {
        return Err(failed(
            call,
            format!(
                "page holds {} objects, more than the {antall} asked for",
                list.len()
            ),
        ));
    }
    for (i, o) in list.iter().enumerate() {
        let id = o.get("id").and_then(serde_json::Value::as_u64);
        let version = o.get("versjon").and_then(serde_json::Value::as_u64);
        if id.is_none() || version.is_none() {
            return Err(failed(
                call,
                format!("object {} of the page has no numeric id and versjon", i + 1),
            ));
        }
    }
    let next = match page.pointer("/metadata/neste/start") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            return Err(failed(
                call,
                format!("metadata.neste.start is not a start token: {other}"),
            ))
        }
    };
    Ok((list.len(), next))
}

/// The id a `<id>-<versjon>` token names (for the report's "resumed after id").
fn token_id(token: &str) -> Option<u64> {
    token.split('-').next()?.parse().ok()
}

/// Download the paged list `url` (`…/vegobjekter/{typeId}`) into `dir`, resuming from its
/// saved state.
pub(super) fn download_pages(
    client: &reqwest::blocking::Client,
    url: &str,
    dir: &Path,
    name: &str,
    opts: &DownloadOptions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<StreamReport> {
    std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    if dir.join(STATE_FILE).exists() {
        return Err(EngineError::input(format!(
            "{} holds a /stream download (its {STATE_FILE}): the paged list of every version cannot go beside it (the active versions would be read twice); remove that directory or choose another --download-dir",
            dir.display()
        )));
    }
    let mut state = read_pages_state(dir)?;
    let antall = opts.batch.clamp(1, MAX_PAGE_OBJECTS);
    let mut report = StreamReport {
        name: name.to_string(),
        resumed_from: state.next.as_deref().and_then(token_id),
        ..Default::default()
    };
    while !state.done {
        let antall_text = antall.to_string();
        let mut params = vec![("antall", antall_text.as_str()), ("inkluder", "alle")];
        if let Some(start) = &state.next {
            params.push(("start", start.as_str()));
        }
        let call = reqwest::Url::parse_with_params(url, &params)
            .map_err(|e| failed(url, e))?
            .to_string();
        let page = fetch_json(client, &call, MAX_OBJECT_PAGE_BYTES, opts, &mut report)?
            .ok_or_else(|| failed(&call, "HTTP 404"))?;
        let (count, next) = check_page(&call, &page, antall)?;
        if count == 0 {
            state.done = true;
        } else {
            if next.is_some() && next == state.next {
                return Err(failed(
                    &call,
                    "the page's neste.start is the token it was called with (the list does not advance)",
                ));
            }
            write_json(&dir.join(format!("page-{:010}.json", state.pages)), &page)?;
            report.records += count;
            state.pages += 1;
            state.done = next.is_none();
            state.next = next;
        }
        let bytes = serde_json::to_vec(&state).map_err(|e| EngineError::Internal(e.to_string()))?;
        write_atomically(&dir.join(PAGES_STATE), &bytes)?;
        progress(&report);
    }
    Ok(report)
}

/// A `/stream` download into `dir`, which holds a paged download, is refused (the active
/// versions would be read twice).
pub(super) fn refuse_paged(dir: &Path) -> Result<()> {
    if dir.join(PAGES_STATE).exists() {
        return Err(EngineError::input(format!(
            "{} holds a download of the paged list of every version (its {PAGES_STATE}, from --history): the /stream cannot go beside it (the active versions would be read twice); import with --history again, remove that directory or choose another --download-dir",
            dir.display()
        )));
    }
    Ok(())
}
