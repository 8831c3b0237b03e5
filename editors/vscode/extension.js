// The squall debug type: VS Code starts `squall dap` (the `squall.path` setting, default
// `squall` on PATH) and talks DAP to it. Stepping backward is VS Code's own Step Back and
// Reverse commands (the adapter advertises supportsStepBack); the reverse step in / out and the
// jump to an entry idx are squall's custom requests, offered as commands here.
'use strict';
const vscode = require('vscode');

function activate(context) {
  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory('squall', {
      createDebugAdapterDescriptor() {
        const squall = vscode.workspace.getConfiguration('squall').get('path') || 'squall';
        return new vscode.DebugAdapterExecutable(squall, ['dap']);
      },
    }),
    vscode.debug.registerDebugConfigurationProvider('squall', {
      resolveDebugConfiguration(folder, config) {
        // F5 with no launch.json: record and debug the Python file in the editor.
        if (!config.type && !config.request && !config.name) {
          const editor = vscode.window.activeTextEditor;
          if (editor && editor.document.languageId === 'python') {
            return { type: 'squall', request: 'launch', name: 'squall: record and debug this file',
                     program: editor.document.fileName, stopOnEntry: true };
          }
        }
        return config;
      },
    }),
    vscode.commands.registerCommand('squall.stepInBack', () => custom('squall/stepInBack')),
    vscode.commands.registerCommand('squall.stepOutBack', () => custom('squall/stepOutBack')),
    vscode.commands.registerCommand('squall.gotoEntry', async () => {
      const text = await vscode.window.showInputBox({ prompt: 'Entry idx to jump to (as the query API and the UI number them)' });
      if (text !== undefined && /^\d+$/.test(text.trim())) {
        await custom('squall/gotoEntry', { idx: Number(text.trim()) });
      }
    }),
  );
}

async function custom(command, args = {}) {
  const session = vscode.debug.activeDebugSession;
  if (!session || session.type !== 'squall') {
    vscode.window.showWarningMessage('No squall debug session is active.');
    return;
  }
  const threadId = vscode.debug.activeStackItem && vscode.debug.activeStackItem.threadId;
  try {
    await session.customRequest(command, threadId === undefined ? args : { threadId, ...args });
  } catch (e) {
    vscode.window.showErrorMessage(String(e.message || e));
  }
}

function deactivate() {}

module.exports = { activate, deactivate };
