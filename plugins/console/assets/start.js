/* The console starts: after every page is defined (index.html loads this last). */
'use strict';

window.addEventListener('hashchange', () => { if (session.token) { void route(); $('page').focus(); } });
$('login-form').addEventListener('submit', login);
$('logout').addEventListener('click', logout);
if (session.token) void enter(); else showLogin();
