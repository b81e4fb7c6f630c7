/*
 * auditweb-assets.c - the auditor's page's script and style, compiled in
 * (auditweb-assets.inc is made from share/audit-web/ by make: nothing is
 * read from disk or fetched at run time).
 */
#include "config.h"

#include "serve/auditweb-int.h"

#include "serve/auditweb-assets.inc"

const struct aw_asset aw_assets[] = {
    {"/static/app.js", "text/javascript; charset=utf-8", aw_app_js,
     sizeof(aw_app_js)},
    {"/static/app.css", "text/css; charset=utf-8", aw_app_css,
     sizeof(aw_app_css)},
};
const size_t aw_nassets = sizeof(aw_assets) / sizeof(aw_assets[0]);
