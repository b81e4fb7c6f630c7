/* app.js - the auditor's page's enhancements (placeholder: the page
 * reads without it; helper W2 writes the real one). */
"use strict";
