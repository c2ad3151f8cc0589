// The routes of the coordinator's HTTP server: what each URL answers, who may ask, and how a
// failure reads (JSON {"error": "..."} with the status code its kind maps to).
#pragma once

#include "coordinator/http/http_server.h"

namespace coupler::coordinator::http {

void AddApiRoutes(httplib::Server& server, const HttpContext& context);

// The HTTP status for a failure of this kind: InvalidArgument 400, PermissionDenied 403,
// NotFound 404, ResourceExhausted 429, Unavailable 503, DeadlineExceeded 504, else 500.
int HttpStatusFor(StatusCode code);

}  // namespace coupler::coordinator::http
