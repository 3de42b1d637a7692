import type * as vscode from 'vscode';
import { Controller } from './controller';

let controller: Controller | undefined;

export function activate(context: vscode.ExtensionContext): void {
  controller = new Controller(context);
  context.subscriptions.push(controller);
  void controller.start();
}

export async function deactivate(): Promise<void> {
  const c = controller;
  controller = undefined;
  if (c) await c.server.stop();
}
