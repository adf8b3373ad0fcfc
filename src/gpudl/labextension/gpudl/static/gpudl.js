/*
 * gpudl's lab extension: the Validate button students get (gpudl.labserver serves it).
 *
 * Written by hand, with no build step: JupyterLab loads a prebuilt ("federated") extension by
 * running this script, which registers a container in window._JUPYTERLAB[name] with init(shareScope)
 * and get(module); JupyterLab's own packages come from the shared scope that init receives.
 *
 * One plugin, "gpudl:validate":
 *   - a Validate button on a notebook that has graded cells (a lab), none on a lecture;
 *   - on a click: save, POST assignments/validate (gpudl.labserver's handler), show the answer
 *     in a dialog that begins with its summary line ("7 of 9 tests pass (24 of 32 points)"),
 *     then each failed test with its name, points, source and error, as nbgrader's dialog does.
 */
var _JUPYTERLAB;
(function () {
  "use strict";
  let shareScope = null;

  // A package JupyterLab shares, the copy its own application uses.
  async function shared(name) {
    const versions = Object.values((shareScope || {})[name] || {});
    const entry = versions.find(v => v.from === "@jupyterlab/application-top") || versions.find(v => v.loaded)
      || versions[0];
    if (!entry) {
      throw new Error(`gpudl: JupyterLab shares no ${name}`);
    }
    return (await entry.get())();
  }

  // A lab has graded cells (its tests); a lecture has none (gpudl.labserver.is_lab says the same).
  function isLab(notebook) {
    return (notebook.cells || []).some(cell => !!((cell.metadata || {}).nbgrader || {}).grade);
  }

  function points(value) {
    return Number.isInteger(value) ? String(value) : String(Math.round(value * 100) / 100);
  }

  // The dialog's body: #validation-message, its first line the summary.
  function render(answer) {
    const node = document.createElement("div");
    node.id = "validation-message";
    const line = (text, className) => {
      const p = document.createElement("p");
      p.innerText = text;
      if (className) {
        p.className = className;
      }
      node.append(p);
      return p;
    };
    const block = (content, html) => {
      const div = document.createElement("div");
      const pre = document.createElement("pre");
      div.className = "jp-RenderedText";
      if (html) {
        pre.innerHTML = content;      // nbgrader's ansi2html of the cell's own error: escaped, with colours
      } else {
        pre.innerText = content;
      }
      div.append(pre);
      node.append(div);
    };
    if (answer.success !== true) {
      line("There was an error running the validate command:");
      block(String(answer.value));
      node.classList.add("validation-error");
      return node;
    }
    const value = typeof answer.value === "string" ? JSON.parse(answer.value) : answer.value;
    if (value.lecture) {
      line("This is a lecture notebook: it has no tests, so there is nothing to validate. "
        + "Validate checks a lab.", "gpudl-validate-summary");
      node.classList.add("validation-lecture");
      return node;
    }
    if (value.summary) {
      const s = line(value.summary.line, "gpudl-validate-summary");
      s.style.fontWeight = "bold";
    }
    if (value.type_changed) {
      for (const cell of value.type_changed) {
        line(`The following ${cell.old_type} cell has changed to a ${cell.new_type} cell, but it should not have!`);
        block(cell.source);
      }
      node.classList.add("validation-type-changed");
    } else if (value.changed) {
      for (const cell of value.changed) {
        line("The source of the following cell has changed, but it should not have!");
        block(cell.source);
      }
      node.classList.add("validation-changed");
    } else if (value.failed && value.failed.length) {
      for (const cell of value.failed) {
        const scored = cell.max_points !== undefined && cell.points !== null && cell.points !== undefined;
        const name = cell.grade_id ? ` ${cell.grade_id}` : "";
        const score = scored ? ` (${points(cell.points)} of ${points(cell.max_points)} points)` : "";
        line(`The following cell failed:${name}${score}`);
        block(cell.source);
        block(cell.error, true);
      }
      node.classList.add("validation-failed");
    } else {
      line("Success! Your notebook passes all the tests.");
      line("When it is graded, hidden tests run the same checks on other cases: write general code.");
      node.classList.add("validation-success");
    }
    return node;
  }

  const plugin = {
    id: "gpudl:validate",
    description: "Validate on lab notebooks, its answer led by a summary line",
    autoStart: true,
    activate: async app => {
      const [apputils, widgets, services, coreutils] = await Promise.all([
        shared("@jupyterlab/apputils"), shared("@lumino/widgets"), shared("@jupyterlab/services"),
        shared("@jupyterlab/coreutils")]);

      function show(title, node) {
        return apputils.showDialog({title, body: new widgets.Widget({node}), buttons: [apputils.Dialog.okButton()]});
      }

      function validateButton(panel) {
        let running = false;
        const button = new apputils.ToolbarButton({
          className: "validate-button",
          label: "Validate",
          tooltip: "Validate: save, run the whole notebook and its tests",
          onClick: () => void run()
        });
        const label = text => {
          const span = button.node.querySelector(".jp-ToolbarButtonComponent-label");
          if (span) {
            span.innerText = text;
          }
        };
        async function run() {
          if (running) {
            return;
          }
          running = true;
          try {
            label("Saving...");
            try {
              await panel.context.save();
            } catch (error) {
              const p = document.createElement("p");
              p.innerText = `The notebook could not be saved, so it was not validated: ${error}`;
              await show("Validation failed", p);
              return;
            }
            label("Validating...");
            let answer;
            try {
              const settings = app.serviceManager.serverSettings;
              const url = coreutils.URLExt.join(settings.baseUrl, "assignments/validate")
                + "?path=" + encodeURIComponent(panel.context.path);
              const response = await services.ServerConnection.makeRequest(url, {method: "POST"}, settings);
              answer = response.ok ? await response.json()
                : {success: false, value: `the server answered ${response.status} ${response.statusText}`};
            } catch (error) {
              answer = {success: false, value: String(error)};
            }
            label("Validate");
            await show("Validation Results", render(answer));
          } finally {
            running = false;
            label("Validate");
          }
        }
        return button;
      }

      app.docRegistry.addWidgetExtension("Notebook", {
        createNew(panel, context) {
          let button = null;
          let disposed = false;
          context.ready.then(() => {
            if (disposed || panel.isDisposed || !isLab(context.model.toJSON())) {
              return;
            }
            button = validateButton(panel);
            let index = 0;      // after the run buttons, before the spacer (where nbgrader puts its own)
            for (const item of panel.toolbar.children()) {
              if (!item || item.node.classList.contains("jp-Toolbar-spacer")) {
                break;
              }
              index++;
            }
            panel.toolbar.insertItem(index, "gpudl-validate", button);
          });
          return {
            get isDisposed() {
              return disposed;
            },
            dispose() {
              disposed = true;
              if (button) {
                button.dispose();
              }
            }
          };
        }
      });
    }
  };

  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB.gpudl = {
    init: async scope => {
      shareScope = scope;
    },
    get: async module => {
      if (module !== "./extension") {
        throw new Error(`gpudl's lab extension has no module ${module}`);
      }
      return () => ({__esModule: true, default: [plugin]});
    }
  };
})();
