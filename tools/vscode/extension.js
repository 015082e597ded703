// The VS Code client of `aviflowc lsp`: starts the server over stdio for .avf
// files and restarts it when the `aviflowc.path` setting changes.
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function serverCommand() {
  const configured = vscode.workspace.getConfiguration('aviflowc').get('path');
  return configured && configured.trim() !== '' ? configured.trim() : 'aviflowc';
}

function createClient(command) {
  const serverOptions = { command, args: ['lsp'], transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'avf' },
      { scheme: 'untitled', language: 'avf' },
    ],
  };
  return new LanguageClient('aviflowc', 'aviflowc lsp', serverOptions, clientOptions);
}

async function startClient() {
  const command = serverCommand();
  client = createClient(command);
  try {
    await client.start();
  } catch (error) {
    client = undefined;
    const reason = error && error.message ? error.message : String(error);
    vscode.window.showErrorMessage(
      `Cannot start \`${command} lsp\` (${reason}). Set \`aviflowc.path\` to the aviflowc executable ` +
        '(build/bin/aviflowc of a build, or a name on PATH).');
  }
}

async function stopClient() {
  if (client === undefined) {
    return;
  }
  const running = client;
  client = undefined;
  await running.stop();
}

async function restartClient() {
  await stopClient();
  await startClient();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('aviflowc.restartServer', restartClient),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('aviflowc.path')) {
        restartClient();
      }
    }),
  );
  await startClient();
}

function deactivate() {
  return stopClient();
}

module.exports = { activate, deactivate };
