"""Every error code FileKiln gives out, in one table: its HTTP status (for API problems), a title, and a
sentence for people.

The codes are the stable words programs match on: the ``code`` of an API problem, the ``errorCode`` of
a failed job, the code of a failed model download. The exceptions that carry them live in
:mod:`localapi.core.errors` (service errors) and :mod:`converters.base` (``ConversionError``); this
table is what the API docs list (``docs/api.md``, checked against it by the tests) and what the
desktop shows instead of a code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    title: str  # short, like a problem's ``title``
    text: str  # for people: what happened and, when there is something to do, what
    statuses: tuple[int, ...] = ()  # HTTP statuses of the API problems that carry it; () when none does
    job: bool = False  # a failed job may carry it as ``errorCode``


def _api(status: int, title: str, text: str, *more: int, job: bool = False) -> ErrorCode:
    return ErrorCode(title, text, (status, *more), job)


def _job(title: str, text: str) -> ErrorCode:
    return ErrorCode(title, text, (), True)


CODES: dict[str, ErrorCode] = {
    # ---- requests the API refuses ----
    "bad_request": _api(400, "Malformed request", "The request was not understood."),
    "malformed_request": _api(400, "Malformed request", "The request was not understood."),
    "upload_interrupted": _api(400, "Upload interrupted", "The upload stopped before the whole file arrived."),
    "invalid_api_key": _api(401, "API key missing or invalid", "The API key is missing, unknown or revoked."),
    "quota_exceeded": _api(402, "Daily job quota reached", "This key's daily job quota is used up."),
    "host_not_allowed": _api(403, "Forbidden", "FileKiln answers only requests addressed to this computer."),
    "cross_site_request": _api(403, "Forbidden", "Requests from other web sites are refused."),
    "invalid_signature": _api(403, "Download link is not valid", "The download link was altered."),
    "not_found": _api(404, "Not found", "There is nothing at this address."),
    "job_not_found": _api(404, "Job not found", "The job does not exist (any more)."),
    "file_not_found": _api(404, "File not found", "The file does not exist (any more)."),
    "tool_not_found": _api(404, "Tool not found", "There is no such tool."),
    "webhook_not_found": _api(404, "Webhook not found", "The webhook does not exist (any more)."),
    "workflow_not_found": _api(404, "Workflow not found", "The workflow does not exist (any more)."),
    "preset_not_yours": _api(403, "Not this key's preset",
                             "A key changes and deletes only the presets it made; save a copy under another name."),
    "preset_not_found": _api(404, "Preset not found", "There is no preset of that name."),
    "watch_folder_not_found": _api(404, "Watch folder not found", "The watch folder does not exist (any more)."),
    "unknown_tool": _api(422, "Unknown tool", "This tool is not installed in this FileKiln.", 404, job=True),
    "method_not_allowed": _api(405, "Method not allowed", "This address does not take that kind of request."),
    "request_timeout": _api(408, "Request timeout", "The request stopped arriving before it was complete."),
    "job_not_finished": _api(409, "Job not finished", "The job has not finished yet."),
    "job_finished": _api(409, "Job finished", "The job has already finished."),
    "job_failed": _api(409, "Job failed", "The job failed, so it has no result; its errorCode says why."),
    "job_canceled": _api(409, "Job canceled", "The job was canceled, so it has no result."),
    "file_in_use": _api(409, "File in use", "The file is an input of a job that has not finished."),
    "idempotency_in_flight": _api(409, "Request in progress",
                                  "The same request is still being handled; wait for its answer."),
    "job_not_retryable": _api(409, "Job not retryable", "Only a failed or canceled job can be run again."),
    "workflow_running": _api(409, "Workflow running",
                             "The job is a step of a workflow still running; cancel the workflow instead."),
    "workflow_not_finished": _api(409, "Workflow not finished", "The workflow has not finished yet."),
    "workflow_finished": _api(409, "Workflow finished", "The workflow has already finished."),
    "workflow_failed": _api(409, "Workflow failed",
                            "The workflow failed, so it has no result; its errorMessage says where."),
    "workflow_canceled": _api(409, "Workflow canceled", "The workflow was canceled, so it has no result."),
    "preset_exists": _api(409, "Preset exists", "A preset of that name exists already; choose another name."),
    "too_many_webhooks": _api(409, "Too many webhooks", "A key may have 20 webhooks; delete one first."),
    "preset_builtin": _api(409, "Built-in preset",
                           "Built-in presets cannot be changed or deleted; save a copy under another name."),
    "link_expired": _api(410, "Link expired", "The download link has expired; ask for a new one."),
    "file_expired": _api(410, "File expired", "The file is no longer kept (see retention in Settings)."),
    "result_expired": _api(410, "Result expired", "The result is no longer kept (see retention in Settings)."),
    "file_deleted": _api(410, "File deleted", "The file was deleted."),
    "result_deleted": _api(410, "Result deleted", "The job's result was deleted."),
    "inputs_gone": _api(410, "Inputs gone", "The job's input files are no longer kept; add them again."),
    "file_too_large": _api(413, "File too large", "The file is larger than this tool accepts."),
    "request_too_large": _api(413, "Request too large", "The request is larger than FileKiln takes.", 431),
    "unsupported_format": _api(415, "Unsupported input format", "This tool cannot read this kind of file.",
                               job=True),
    "range_not_satisfiable": _api(416, "Range not satisfiable", "The requested part lies outside the file."),
    "invalid_params": _api(422, "Invalid parameters", "Some settings do not fit this file; check the parameters.",
                           job=True),
    "unknown_file": _api(422, "Unknown input file",
                         "The original files are no longer kept (see retention in Settings); add them again."),
    "idempotency_mismatch": _api(422, "Idempotency key reused",
                                 "The same Idempotency-Key came with a different request."),
    "unknown_preset": _api(422, "Unknown preset", "There is no preset of that name."),
    "preset_has_steps": _api(422, "Preset has several steps", "A preset of several steps runs as a workflow."),
    "incompatible_steps": _api(422, "Steps do not fit",
                               "A step cannot take what the step before it makes; choose another tool or format."),
    "invalid_preset_name": _api(422, "Invalid preset name",
                                "A preset's name is 1 to 80 characters, without slashes."),
    "invalid_preset_file": _api(422, "Not a presets file", "The file is not a FileKiln presets file."),
    "invalid_watch_folder": _api(422, "Invalid watch folder", "The watch folder or its output folder cannot be used."),
    "webhook_target_not_allowed": _api(422, "Webhook target not allowed",
                                       "Webhooks go only to this computer, or to hosts listed in the "
                                       "webhook_allowed_hosts setting."),
    "rate_limited": _api(429, "Too many requests", "Too many requests in a short time; slow down."),
    "too_many_streams": _api(429, "Too many event streams",
                             "As many event streams are open for this key (or address) as it may have at once; "
                             "close one first."),
    "internal_error": _api(500, "Internal error", "Something went wrong inside FileKiln; the log has details."),
    "maintenance": _api(503, "Maintenance", "FileKiln is in maintenance mode; switch it off in the API panel."),
    "shutting_down": _api(503, "Shutting down", "FileKiln was stopping; send the request again once it is back."),
    "tool_disabled": _api(503, "Tool disabled", "This tool is switched off in the settings."),
    "tool_unavailable": _api(503, "Tool unavailable",
                             "This tool cannot run on this computer yet. See the Engines panel."),
    "storage_unavailable": _api(503, "File store unavailable",
                                "The file store (a bucket) cannot be reached; try again shortly.", job=True),
    "disk_full": _api(507, "Insufficient storage", "The disk is full; free some space and try again.", job=True),
    # ---- why a job failed: the service ----
    "timeout": _job("Timed out", "The conversion took too long and was stopped."),
    "out_of_memory": _job("Out of memory", "The conversion needed more memory than allowed and was stopped."),
    "engine_crashed": _job("Engine crashed", "The conversion program stopped unexpectedly."),
    "interrupted": _job("Interrupted", "FileKiln was stopped while this job ran, twice. Try again."),
    "io_error": _job("Result not written", "The result could not be written to disk."),
    "no_output": _job("No output", "The tool finished without producing a file."),
    "params_unreadable": _job("Passwords unreadable", "The job's passwords were sealed with another key than "
                                                      "the worker's; every process needs the same params_key."),
    # ---- why a job failed: the tool (also a 422 when the tool refuses the input before the job is queued) ----
    "damaged_input": _job("Damaged input",
                          "The file looks damaged or is not what its type says, so it could not be read."),
    "password_protected": _job("Password protected",
                               "The file is protected by a password. Unlock it first (PDF: the Unlock tool)."),
    "wrong_password": _job("Wrong password", "The password is not right for this file."),
    "bad_certificate": _job("Bad certificate", "The certificate file cannot be used to sign: wrong password, "
                                               "no private key, expired, or damaged."),
    "not_signed": _job("Not signed", "The PDF has no digital signature to check."),
    "unsupported_conversion": _job("Unsupported conversion", "This tool cannot make that output from this file."),
    "invalid_pages": _job("Invalid pages", "The page numbers do not exist in this document."),
    "invalid_trim": _job("Invalid trim", "The start or end of the cut lies outside the recording."),
    "input_too_large": _job("Input too large", "The file is too large for this tool."),
    "input_too_long": _job("Input too long", "The recording is longer than this tool takes."),
    "unsafe_input": _job("Unsafe input", "The file was refused because it could be harmful."),
    "unsafe_archive": _job("Unsafe archive", "The archive was refused because unpacking it could be harmful."),
    "no_text": _job("No text", "No text was found in this file."),
    "no_bookmarks": _job("No bookmarks", "The PDF has no bookmarks to split at."),
    "no_attachments": _job("No attachments", "The PDF has no attached files."),
    "no_form_fields": _job("No form fields", "The PDF has no form fields to fill."),
    "no_images": _job("No images", "The PDF has no images to extract."),
    "empty_media": _job("Empty media", "The file contains no audio or video to convert."),
    "no_video_stream": _job("No video", "The file has no video in it."),
    "no_audio_stream": _job("No audio", "The file has no sound in it."),
    "engine_missing": _job("Engine missing", "A program this tool needs is not installed. See the Engines panel."),
    "engine_failed": _job("Engine failed", "The conversion program failed on this file."),
    "engine_error": _job("Engine error", "The conversion program failed on this file."),
    "ffmpeg_error": _job("Media engine error", "The audio and video engine failed on this file."),
    "encode_failed": _job("Encoding failed", "The result could not be encoded in the chosen format."),
    "render_failed": _job("Rendering failed", "The document could not be laid out as a PDF."),
    "unknown_language": _job("Unknown language",
                             "The language chosen is not installed. See the Engines panel for how to add it."),
    "unsupported_language": _job("Unsupported language", "The chosen model does not know this language."),
    "model_missing": _job("Model missing", "A model this tool needs is not installed. See the Engines panel."),
    "model_damaged": _job("Model damaged", "The model file is damaged; download or import it again."),
    "llm_unavailable": _job("Language model unavailable",
                            "No language model is set up for the AI tools; choose one in Settings."),
    "llm_unreachable": _job("Language model unreachable",
                            "The language model server did not answer; check that it is running."),
    "llm_failed": _job("Language model failed", "The language model could not finish this text."),
    "llm_context_too_small": _job("Context too small",
                                  "The language model's context is too small for this tool; choose a larger one."),
    # ---- model downloads (filekiln models download, the Engines panel) ----
    "unknown_model": ErrorCode("Unknown model", "There is no downloadable model of that name."),
    "download_failed": ErrorCode("Download failed", "The model could not be downloaded; try again later."),
    "checksum_mismatch": ErrorCode("Checksum mismatch",
                                   "The downloaded model is not the published file, so it was not installed."),
}


def friendly_text(code: str | None) -> str | None:
    """The sentence for people for ``code``; ``None`` for a code this table does not know."""
    entry = CODES.get(code or "")
    return entry.text if entry is not None else None
