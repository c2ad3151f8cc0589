// The live page at `/`: workers, jobs with their progress, and one job's graph with loose and
// tight nodes told apart. Rendered here, on the server, from a snapshot: the tables read the
// same with JavaScript off (the page then reloads itself every few seconds); with it on, a
// small script swaps in a fresh body every two seconds. Nothing is fetched from elsewhere.
#pragma once

#include <string>
#include <string_view>

#include "coordinator/http/snapshot.h"

namespace coupler::coordinator::http {

// The whole document. `job`: the job whose graph is shown (empty: the newest).
std::string RenderPage(const Snapshot& snapshot, std::string_view job, std::string_view version);
// What the script swaps in: the contents of <main id="live">.
std::string RenderPageBody(const Snapshot& snapshot, std::string_view job);
// Served with 401 to a browser that has no token yet: how to open the page.
std::string UnauthorizedPage();

std::string_view PageScript();
std::string_view PageStyle();

// Text made safe for HTML content and attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace coupler::coordinator::http
